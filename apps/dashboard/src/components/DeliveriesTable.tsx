import { formatTime } from "../format";
import { Link } from "../router";
import { StatusBadge, DataTable } from "./ui";
import type { DeliveryAttempt, WebhookDeliverySummary } from "../types";

type DeliveryRow = WebhookDeliverySummary & { jobId?: string | null };

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
          <td data-label="Attempts">{attemptsOf ? <AttemptLog count={delivery.attempts} attempts={attemptsOf(delivery.id)} /> : delivery.attempts}</td>
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

function AttemptLog({ count, attempts }: { count: number; attempts: DeliveryAttempt[] }) {
  if (attempts.length === 0) return <>{count}</>;
  return (
    <details className="attempts">
      <summary>
        {count} {count === 1 ? "attempt" : "attempts"}
      </summary>
      <ol>
        {attempts.map((attempt) => (
          <li key={attempt.attempt}>
            #{attempt.attempt} at {formatTime(attempt.startedAt)}: {attempt.responseStatus !== null ? `HTTP ${attempt.responseStatus}` : (attempt.error ?? "no response")} in{" "}
            {attempt.latencyMs} ms
          </li>
        ))}
      </ol>
    </details>
  );
}
