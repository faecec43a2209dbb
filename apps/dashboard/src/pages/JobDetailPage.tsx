import { useEffect, useState } from "react";
import { api, withQuery } from "../api";
import { creditCount, formatBytes, formatDuration, formatTime, isTerminal, previewKind } from "../format";
import { useJobEvents } from "../live";
import { Link } from "../router";
import { DeliveriesTable } from "../components/DeliveriesTable";
import { canManage } from "../members";
import { useSession } from "../session";
import { ConfirmDialog, EmptyState, ErrorMessage, JobProgressBar, Loading, Notice, PageHeader, StatusBadge, useResource } from "../components/ui";
import type { Delivery, Job, JobType, WebhookDeliverySummary } from "../types";

// Webhook deliveries reach the job record shortly after the job's own events; keep refreshing for a while after
// the job finishes, and while any delivery is still pending a retry.
const FOLLOW_UP_MS = 60_000;
const REFRESH_MS = 3_000;

export function JobDetailPage({ jobId }: { jobId: string }) {
  const job = useResource(() => api.get<Job>(`/jobs/${encodeURIComponent(jobId)}`), [jobId]);
  const jobTypes = useResource(() => api.get<JobType[]>("/job-types"), []);
  const [actionError, setActionError] = useState<unknown>();
  const [confirmCancel, setConfirmCancel] = useState(false);
  const [cancelling, setCancelling] = useState(false);
  const current = job.data;

  useJobEvents(current && !isTerminal(current.status) ? [current.id] : [], (next) => job.setData(next));

  const needsRefresh =
    current !== undefined &&
    isTerminal(current.status) &&
    (Date.now() - (current.timing.completedAt ?? 0) < FOLLOW_UP_MS || current.webhookDeliveries.some((delivery) => delivery.status === "pending"));
  useEffect(() => {
    if (!needsRefresh) return;
    const timer = setInterval(() => void job.reload(), REFRESH_MS);
    return () => clearInterval(timer);
  }, [needsRefresh, job.reload]);

  if (!current) {
    return (
      <>
        <PageHeader title="Job" />
        <ErrorMessage error={job.error} title="Could not load this job" />
        {job.loading ? <Loading label="Loading job" /> : null}
        <p>
          <Link to="/jobs">Back to jobs</Link>
        </p>
      </>
    );
  }

  const output = jobTypes.data?.find((type) => type.name === current.type)?.output;
  const cancel = async () => {
    setCancelling(true);
    setActionError(undefined);
    try {
      job.setData(await api.post<Job>(`/jobs/${current.id}/cancel`));
    } catch (error) {
      setActionError(error);
    } finally {
      setCancelling(false);
      setConfirmCancel(false);
    }
  };

  return (
    <>
      <p className="breadcrumb">
        <Link to="/jobs">Jobs</Link> / <span className="mono">{current.id}</span>
      </p>
      <PageHeader
        title={`${current.type} job`}
        actions={
          !isTerminal(current.status) ? (
            <button type="button" className="button button-danger" onClick={() => setConfirmCancel(true)}>
              Cancel job
            </button>
          ) : undefined
        }
      >
        <p className="status-line" aria-live="polite">
          Status: <StatusBadge status={current.status} />
          {!isTerminal(current.status) ? <span className="muted"> updating live</span> : null}
        </p>
        <JobProgressBar job={current} />
      </PageHeader>
      <ErrorMessage error={actionError} />
      <ErrorMessage error={job.error} title="Could not refresh this job" />

      {current.error ? (
        <div className="alert alert-error">
          <strong>{current.error.code}</strong>: {current.error.message}
        </div>
      ) : null}

      <div className="grid">
        <section className="card" aria-labelledby="result-heading">
          <h2 id="result-heading">Result</h2>
          {current.result ? (
            <>
              <ResultPreview url={current.result.url} kind={previewKind(output, current.result.url)} type={current.type} />
              <p>
                <a className="button" href={current.result.url} download target="_blank" rel="noopener">
                  Download result
                </a>
              </p>
              <dl className="facts">
                <dt>Size</dt>
                <dd>{formatBytes(current.result.metadata.fileSize)}</dd>
                <dt>Dimensions</dt>
                <dd>{current.result.metadata.width && current.result.metadata.height ? `${current.result.metadata.width} × ${current.result.metadata.height}` : "-"}</dd>
                <dt>Duration</dt>
                <dd>{formatDuration(current.result.metadata.durationMs)}</dd>
              </dl>
              <p className="hint">Download links expire; reload this page for a fresh one.</p>
            </>
          ) : (
            <p className="muted">{isTerminal(current.status) ? "This job has no result." : "The result appears here when the job completes."}</p>
          )}
        </section>

        <section className="card" aria-labelledby="cost-heading">
          <h2 id="cost-heading">Cost and timing</h2>
          <dl className="facts">
            <dt>Cost</dt>
            <dd>{current.cost ? creditCount(current.cost.credits) : isTerminal(current.status) ? "Not charged" : "Charged on completion"}</dd>
            {current.cost ? (
              <>
                <dt>Breakdown</dt>
                <dd>{current.cost.breakdown}</dd>
              </>
            ) : null}
            <dt>Created</dt>
            <dd>{formatTime(current.timing.createdAt)}</dd>
            <dt>Dispatched</dt>
            <dd>{formatTime(current.timing.dispatchedAt)}</dd>
            <dt>Started</dt>
            <dd>{formatTime(current.timing.startedAt)}</dd>
            <dt>Finished</dt>
            <dd>{formatTime(current.timing.completedAt)}</dd>
            <dt>Queued for</dt>
            <dd>{current.timing.startedAt && current.timing.createdAt ? formatDuration(current.timing.startedAt - current.timing.createdAt) : "-"}</dd>
            <dt>Ran for</dt>
            <dd>{current.timing.completedAt && current.timing.startedAt ? formatDuration(current.timing.completedAt - current.timing.startedAt) : "-"}</dd>
          </dl>
        </section>
      </div>

      <section className="card" aria-labelledby="request-heading">
        <h2 id="request-heading">Request</h2>
        <dl className="facts">
          <dt>Job id</dt>
          <dd className="mono">{current.id}</dd>
          <dt>Batch</dt>
          <dd>{current.batchId ? <Link to={`/batches/${current.batchId}`}>{current.batchId}</Link> : "-"}</dd>
        </dl>
        <h3>Inputs</h3>
        {Object.keys(current.inputs).length === 0 ? (
          <p className="muted">No inputs.</p>
        ) : (
          <dl className="facts">
            {Object.entries(current.inputs).map(([name, url]) => (
              <div key={name} className="fact-row">
                <dt>{name}</dt>
                <dd className="break">{url}</dd>
              </div>
            ))}
          </dl>
        )}
        <h3>Parameters</h3>
        <pre className="code" tabIndex={0} aria-label="Parameters as JSON">{JSON.stringify(current.params, null, 2)}</pre>
        {Object.keys(current.metadata).length > 0 ? (
          <>
            <h3>Metadata</h3>
            <pre className="code" tabIndex={0} aria-label="Metadata as JSON">{JSON.stringify(current.metadata, null, 2)}</pre>
          </>
        ) : null}
      </section>

      <Deliveries jobId={current.id} deliveries={current.webhookDeliveries} onRetried={() => void job.reload()} />

      <ConfirmDialog
        open={confirmCancel}
        title="Cancel this job?"
        confirmLabel="Cancel job"
        busy={cancelling}
        onConfirm={() => void cancel()}
        onCancel={() => setConfirmCancel(false)}
      >
        <p>The job stops and is not charged. This cannot be undone.</p>
      </ConfirmDialog>
    </>
  );
}

function ResultPreview({ url, kind, type }: { url: string; kind: ReturnType<typeof previewKind>; type: string }) {
  if (kind === "image") return <img className="preview" src={url} alt={`Result of the ${type} job`} />;
  if (kind === "video")
    return (
      <video className="preview" src={url} controls preload="metadata" aria-label={`Result of the ${type} job`}>
        <track kind="captions" />
      </video>
    );
  if (kind === "audio") return <audio className="preview-audio" src={url} controls preload="metadata" aria-label={`Result of the ${type} job`} />;
  return null;
}

function Deliveries({ jobId, deliveries, onRetried }: { jobId: string; deliveries: WebhookDeliverySummary[]; onRetried: () => void }) {
  // The job carries a summary per delivery; the delivery log has each attempt. Re-read it when the summary changes.
  const summaryKey = deliveries.map((delivery) => `${delivery.id}:${delivery.status}:${delivery.attempts}`).join(",");
  const log = useResource(
    async () => (summaryKey ? (await api.page<Delivery>(withQuery("/webhooks/deliveries", { jobId, limit: 100 }))).data : []),
    [jobId, summaryKey],
  );
  const attemptsOf = (id: string) => log.data?.find((delivery) => delivery.id === id)?.attemptLog ?? [];
  const session = useSession();
  const [retrying, setRetrying] = useState<string>();
  const [error, setError] = useState<unknown>();
  const [retried, setRetried] = useState<string>();
  const retry = async (id: string) => {
    setRetrying(id);
    setError(undefined);
    setRetried(undefined);
    try {
      await api.post(`/webhooks/deliveries/${encodeURIComponent(id)}/retry`);
      setRetried(id);
      onRetried();
    } catch (caught) {
      setError(caught);
    } finally {
      setRetrying(undefined);
    }
  };
  return (
    <section className="card" aria-labelledby="deliveries-heading">
      <h2 id="deliveries-heading">Webhook deliveries</h2>
      <ErrorMessage error={error} title="Retry failed" />
      {retried ? <Notice tone="success">Delivery {retried} was sent again.</Notice> : null}
      {deliveries.length === 0 ? (
        <EmptyState title="No webhook deliveries for this job">
          <p>
            Deliveries appear here when your organization has a webhook URL. <Link to="/settings/webhooks">Configure webhooks</Link>
          </p>
        </EmptyState>
      ) : (
        <DeliveriesTable
          label="Webhook deliveries"
          deliveries={deliveries}
          showNextAttempt
          attemptsOf={attemptsOf}
          retrying={retrying}
          onRetry={canManage(session.me?.role) ? (id) => void retry(id) : undefined}
        />
      )}
    </section>
  );
}

