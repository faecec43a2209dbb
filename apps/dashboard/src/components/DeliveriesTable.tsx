import { formatTime } from "../format";
import { Link } from "../router";
import { StatusBadge, DataTable } from "./ui";
import type { DeliveryAttempt, WebhookDeliverySummary } from "../types";

type DeliveryRow = WebhookDeliverySummary & { jobId?: string | null; body?: string };

/**
 * Webhook deliveries with a retry button per row (for owners and admins: without `onRetry` there is none): the job page (with each delivery's attempt log and next attempt)
 * and the webhooks settings page (with the job each delivery is about) show the same table.
 */
export function DeliveriesTable({
  label,
  deliveries,
  showJob = false,
  showNextAttempt = false,
  attemptsOf,
  retrying,
  onRetry,
}: {
  label: string;
  deliveries: DeliveryRow[];
  showJob?: boolean;
  showNextAttempt?: boolean;
  /** When given, the attempts cell opens the delivery's attempt log. */
  attemptsOf?: (deliveryId: string) => DeliveryAttempt[];
  retrying?: string | undefined;
  onRetry?: ((deliveryId: string) => void) | undefined;
}) {
  return (
    <DataTable label={label} columns={["Event", "Status", showJob && "Job", "Attempts", "Last attempt", "Response", showNextAttempt && "Next attempt", onRetry !== undefined && { label: "Actions", hidden: true }]}>
      {deliveries.map((delivery) => (
        <tr key={delivery.id} data-delivery-id={delivery.id}>
          <td data-label="Event">
            <span className="mono">{delivery.event}</span>
          </td>
          <td data-label="Status">
            <StatusBadge status={delivery.status} />
          </td>
          {showJob ? (
            <td data-label="Job">
              {delivery.jobId ? (
                <Link to={`/jobs/${delivery.jobId}`} className="mono">
                  {delivery.jobId}
                </Link>
              ) : (
                "-"
              )}
            </td>
          ) : null}
          <td data-label="Attempts">{attemptsOf ? <AttemptLog count={delivery.attempts} attempts={attemptsOf(delivery.id)} body={delivery.body} /> : delivery.attempts}</td>
          <td data-label="Last attempt">{formatTime(delivery.lastAttemptAt)}</td>
          <td data-label="Response">{delivery.lastResponseStatus !== null ? `HTTP ${delivery.lastResponseStatus}` : (delivery.lastError ?? "-")}</td>
          {showNextAttempt ? <td data-label="Next attempt">{formatTime(delivery.nextAttemptAt)}</td> : null}
          {onRetry ? (
            <td data-label="Actions">
              <button
                type="button"
                className="button button-small"
                onClick={() => onRetry(delivery.id)}
                disabled={delivery.status === "pending" || retrying === delivery.id}
                aria-label={`Retry ${delivery.event} delivery ${delivery.id}`}
              >
                {retrying === delivery.id ? "Retrying…" : "Retry"}
              </button>
            </td>
          ) : null}
        </tr>
      ))}
    </DataTable>
  );
}

function AttemptLog({ count, attempts, body }: { count: number; attempts: DeliveryAttempt[]; body?: string | undefined }) {
  if (attempts.length === 0) return <>{count}</>;
  return (
    <details className="attempts">
      <summary>
        {count} {count === 1 ? "attempt" : "attempts"}
      </summary>
      {body !== undefined ? (
        <details>
          <summary>Request body</summary>
          <pre className="mono" tabIndex={0} role="region" aria-label="Request body">
            {body}
          </pre>
        </details>
      ) : null}
      <ol>
        {attempts.map((attempt) => (
          <li key={attempt.attempt}>
            #{attempt.attempt} at {formatTime(attempt.startedAt)}: {attempt.responseStatus !== null ? `HTTP ${attempt.responseStatus}` : (attempt.error ?? "no response")} in{" "}
            {attempt.latencyMs} ms
            <details>
              <summary>
                Request and response<span className="visually-hidden"> of attempt {attempt.attempt}</span>
              </summary>
              {attempt.error ? <p>Error: {attempt.error}</p> : null}
              <Headers title="Request headers (signatures left out)" headers={attempt.requestHeaders} />
              <Headers title="Response headers" headers={attempt.responseHeaders} />
              <p className="hint">Response body (first 4 KB)</p>
              <pre className="mono" tabIndex={0} role="region" aria-label={`Response body of attempt ${attempt.attempt}`}>
                {attempt.responseExcerpt ?? "(none)"}
              </pre>
            </details>
          </li>
        ))}
      </ol>
    </details>
  );
}

function Headers({ title, headers }: { title: string; headers: Record<string, string> | undefined }) {
  const entries = Object.entries(headers ?? {});
  return (
    <>
      <p className="hint">{title}</p>
      {entries.length === 0 ? (
        <p className="mono">(none)</p>
      ) : (
        <dl className="mono">
          {entries.map(([name, value]) => (
            <div key={name}>
              <dt>{name}</dt>
              <dd>{value}</dd>
            </div>
          ))}
        </dl>
      )}
    </>
  );
}
