import { randomBytes } from "node:crypto";
import { validationError, type AppError } from "@renderbus/errors";
import { webhookUrlProblem } from "@renderbus/address-guard";

/** The org's webhookUrl as an endpoint (docs/webhooks.md, "The default endpoint"). */
export const DEFAULT_ENDPOINT_ID = "ep_default";

/**
 * Events an endpoint may subscribe to. `endpoint.disabled` (operational) and `job.progress` (frequent, best-effort)
 * are opt-in: only endpoints naming them receive them.
 */
export const ENDPOINT_EVENTS = ["job.running", "job.completed", "job.failed", "batch.completed", "endpoint.disabled", "job.progress"] as const;
/** Opt-in events: never covered by `"*"`, and the only names allowed beside it. */
const OPT_IN_EVENTS = new Set<string>(["endpoint.disabled", "job.progress"]);
/** Events `"*"` covers: every job and batch event (operational events are opt-in). */
const WILDCARD_EVENTS = new Set<string>(["job.running", "job.completed", "job.failed", "batch.completed", "webhook.test"]);

export const ORDERINGS = ["none", "fifo"] as const;
export type Ordering = (typeof ORDERINGS)[number];
export const RETRY_SCHEDULES = ["seed", "extended"] as const;
export type RetryScheduleName = (typeof RETRY_SCHEDULES)[number];

export const DESCRIPTION_MAX = 500;
export const RATE_LIMIT_MAX = 10_000;
export const SECRET_MIN = 8;
export const SECRET_MAX = 1000;
/** Grace of a rotated secret: default 24 h, at most 7 days. */
export const GRACE_SECONDS_DEFAULT = 86_400;
export const GRACE_SECONDS_MAX = 7 * 86_400;

/** Whether an endpoint with this filter receives `event`. */
export function endpointMatches(events: readonly string[], event: string): boolean {
  return events.includes(event) || (events.includes("*") && WILDCARD_EVENTS.has(event));
}

/** A new Standard Webhooks secret: `whsec_` and 24 random bytes in base64. */
export function generateEndpointSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}

/** The settings of an endpoint as a create or update gives them (undefined: not given). */
export interface EndpointFields {
  url?: string | undefined;
  description?: string | undefined;
  events?: readonly string[] | undefined;
  ordering?: string | undefined;
  rateLimitPerSecond?: number | undefined;
  retrySchedule?: string | undefined;
  secret?: string | undefined;
}

/** The first problem with the given fields, or undefined. Pure; the URL rule is the org webhookUrl's. */
export function checkEndpointFields(fields: EndpointFields, mode: string): AppError | undefined {
  if (fields.url !== undefined) {
    const problem = webhookUrlProblem(fields.url, { mode, field: "url" });
    if (problem) return validationError(problem);
  }
  if (fields.description !== undefined && fields.description.length > DESCRIPTION_MAX) return validationError(`description must be at most ${DESCRIPTION_MAX} characters`);
  if (fields.events !== undefined) {
    if (fields.events.length === 0) return validationError('events must list event names or be ["*"]');
    if (fields.events.includes("*") && fields.events.some((event) => event !== "*" && !OPT_IN_EVENTS.has(event))) {
      return validationError('events: "*" covers every job and batch event; list only "endpoint.disabled" and "job.progress" beside it');
    }
    const unknown = fields.events.find((event) => event !== "*" && !(ENDPOINT_EVENTS as readonly string[]).includes(event));
    if (unknown !== undefined) return validationError(`events: unknown event ${JSON.stringify(unknown.slice(0, 100))}; one of ${ENDPOINT_EVENTS.join(", ")} or "*"`);
    if (new Set(fields.events).size !== fields.events.length) return validationError("events must not repeat an event");
  }
  if (fields.ordering !== undefined && !(ORDERINGS as readonly string[]).includes(fields.ordering)) return validationError("ordering must be none or fifo");
  if (fields.retrySchedule !== undefined && !(RETRY_SCHEDULES as readonly string[]).includes(fields.retrySchedule)) return validationError("retrySchedule must be seed or extended");
  if (fields.rateLimitPerSecond !== undefined && (!Number.isInteger(fields.rateLimitPerSecond) || fields.rateLimitPerSecond < 1 || fields.rateLimitPerSecond > RATE_LIMIT_MAX)) {
    return validationError(`rateLimitPerSecond must be an integer from 1 to ${RATE_LIMIT_MAX}`);
  }
  if (fields.secret !== undefined && (fields.secret.length < SECRET_MIN || fields.secret.length > SECRET_MAX)) return validationError(`secret must be ${SECRET_MIN}-${SECRET_MAX} characters`);
  return undefined;
}
