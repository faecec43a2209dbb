import { useState, type FormEvent } from "react";
import { api, withQuery } from "../api";
import { formatTime } from "../format";
import { Link, useRouter } from "../router";
import { EmptyState, ErrorMessage, Loading, PageHeader, StatusBadge, DataTable, useResource } from "../components/ui";
import { JOB_STATUSES, type Batch } from "../types";

const PAGE_SIZE = 20;

interface BatchList {
  batches: Batch[];
  nextCursor: string | null;
}

export function BatchesPage() {
  const { navigate } = useRouter();
  const [status, setStatus] = useState("");
  const listUrl = (cursor?: string) => withQuery("/batches", { status: status || undefined, limit: PAGE_SIZE, cursor });
  const batches = useResource(async (): Promise<BatchList> => {
    const page = await api.page<Batch>(listUrl());
    return { batches: page.data, nextCursor: page.nextCursor };
  }, [status]);
  const [loadingMore, setLoadingMore] = useState(false);
  const [moreError, setMoreError] = useState<unknown>();
  const loadMore = async () => {
    const current = batches.data;
    if (!current?.nextCursor) return;
    setLoadingMore(true);
    setMoreError(undefined);
    try {
      const page = await api.page<Batch>(listUrl(current.nextCursor));
      batches.setData({ batches: [...current.batches, ...page.data], nextCursor: page.nextCursor });
    } catch (error) {
      setMoreError(error);
    } finally {
      setLoadingMore(false);
    }
  };
  const [lookup, setLookup] = useState("");
  const open = (event: FormEvent) => {
    event.preventDefault();
    if (lookup.trim()) navigate(`/batches/${encodeURIComponent(lookup.trim())}`);
  };
  return (
    <>
      <PageHeader title="Batches">
        <p className="muted">Batches submitted with POST /batches, with how many of their jobs are in each status.</p>
      </PageHeader>
      <form className="filters" onSubmit={open} aria-label="Filter batches or open one by id">
        <div className="field">
          <label htmlFor="batch-status">Status</label>
          <select id="batch-status" value={status} onChange={(event) => setStatus(event.target.value)}>
            <option value="">Any</option>
            <option value="running">running</option>
            <option value="completed">completed</option>
          </select>
        </div>
        <div className="field">
          <label htmlFor="batch-lookup">Batch id</label>
          <input id="batch-lookup" value={lookup} onChange={(event) => setLookup(event.target.value)} placeholder="batch_…" />
        </div>
        <div className="filter-actions">
          <button type="submit" className="button">
            Open batch
          </button>
        </div>
      </form>
      <ErrorMessage error={batches.error} title="Could not load batches" />
      {batches.loading && !batches.data ? (
        <Loading label="Loading batches" />
      ) : batches.data && batches.data.batches.length === 0 ? (
        <EmptyState title="No batches yet">
          <p>Submit several jobs at once with POST /batches; they show up here with per-status counts.</p>
        </EmptyState>
      ) : batches.data ? (
        <DataTable label="Batches" columns={["Batch", "Status", "Jobs", "Counts", "Created"]}>
          {batches.data.batches.map((batch) => (
            <tr key={batch.id}>
              <td data-label="Batch">
                <Link to={`/batches/${batch.id}`} className="mono">
                  {batch.id}
                </Link>
              </td>
              <td data-label="Status">
                <StatusBadge status={batch.status} />
              </td>
              <td data-label="Jobs">{batch.jobCount}</td>
              <td data-label="Counts">
                <Counts counts={batch.counts} />
              </td>
              <td data-label="Created">{formatTime(batch.timing.createdAt)}</td>
            </tr>
          ))}
        </DataTable>
      ) : null}
      <ErrorMessage error={moreError} title="Could not load more batches" />
      {batches.data?.nextCursor ? (
        <button type="button" className="button load-more" onClick={() => void loadMore()} disabled={loadingMore}>
          {loadingMore ? "Loading…" : "Load more batches"}
        </button>
      ) : null}
    </>
  );
}

function Counts({ counts }: { counts: Record<string, number> }) {
  const nonZero = JOB_STATUSES.filter((status) => (counts[status] ?? 0) > 0);
  if (nonZero.length === 0) return <span className="muted">-</span>;
  return <span>{nonZero.map((status) => `${counts[status]} ${status}`).join(", ")}</span>;
}

export function BatchDetailPage({ batchId }: { batchId: string }) {
  const batch = useResource(() => api.get<Batch>(`/batches/${encodeURIComponent(batchId)}`), [batchId]);
  const current = batch.data;
  return (
    <>
      <p className="breadcrumb">
        <Link to="/batches">Batches</Link> / <span className="mono">{batchId}</span>
      </p>
      <PageHeader
        title="Batch"
        actions={
          <button type="button" className="button" onClick={() => void batch.reload()} disabled={batch.loading}>
            {batch.loading ? "Refreshing…" : "Refresh"}
          </button>
        }
      >
        {current ? (
          <p className="status-line">
            Status: <StatusBadge status={current.status} />
          </p>
        ) : null}
      </PageHeader>
      <ErrorMessage error={batch.error} title="Could not load this batch" />
      {batch.loading && !current ? <Loading label="Loading batch" /> : null}
      {current ? (
        <>
          <ul className="count-grid" aria-label="Jobs per status">
            {JOB_STATUSES.map((status) => (
              <li key={status} className="count-card">
                <span className="count-value">{current.counts[status] ?? 0}</span>
                <span className="count-label">{status}</span>
              </li>
            ))}
          </ul>
          <section className="card" aria-labelledby="batch-facts">
            <h2 id="batch-facts">Details</h2>
            <dl className="facts">
              <dt>Batch id</dt>
              <dd className="mono">{current.id}</dd>
              <dt>Jobs</dt>
              <dd>{current.jobCount}</dd>
              <dt>Created</dt>
              <dd>{formatTime(current.timing.createdAt)}</dd>
              <dt>Finished</dt>
              <dd>{formatTime(current.timing.completedAt)}</dd>
            </dl>
            <p>
              <Link to={withQuery("/jobs", { batchId: current.id })}>See this batch's jobs</Link>
            </p>
          </section>
        </>
      ) : null}
    </>
  );
}
