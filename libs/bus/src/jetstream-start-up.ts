import pRetry from "p-retry";
import type { Logger } from "@renderbus/telemetry";

/**
 * How long a service keeps calling JetStream's API at start-up (the account check, declaring its streams and
 * consumers) while JetStream does not answer yet: a cluster still electing its meta leader or placing a stream's
 * replicas, a node restarting. Past it the error ends the start-up, as any other does.
 */
export const JETSTREAM_START_UP_RETRY_MS = 60_000;

/** Backoff between two calls: doubling from the first to the last. */
const FIRST_RETRY_DELAY_MS = 250;
const LAST_RETRY_DELAY_MS = 2_000;

/** JetStream API errors (err_code) that a cluster still forming answers with, and that pass without any change of ours. */
const TRANSIENT_API_MESSAGES = /temporarily unavailable|no suitable peers|not ready|leader/i;

/**
 * Whether a JetStream API call failed in a way that passes by itself: no answer in time, nobody answering the API
 * subject yet (JetStream not up), or a 503 / cluster-forming answer. Refusals (a bad config, a permission, a missing
 * stream) are not: retrying them would only delay the error.
 */
export function isTransientJetStreamError(error: unknown): boolean {
  let current: unknown = error;
  // nats.js wraps the cause of a failed request (RequestError) in some paths.
  for (let depth = 0; current instanceof Error && depth < 4; depth += 1) {
    if (current.name === "TimeoutError" || current.name === "NoRespondersError" || current.name === "JetStreamNotEnabled") return true;
    if (current.name === "JetStreamApiError") {
      const status = (current as { status?: number }).status;
      return status === 503 || TRANSIENT_API_MESSAGES.test(current.message);
    }
    current = current.cause;
  }
  return false;
}

/**
 * Runs a start-up call to JetStream's API again, with backoff, while it fails transiently (see
 * isTransientJetStreamError), for at most `budgetMs`; any other error, or the last transient one, is thrown. The
 * call must be idempotent (declaring a stream or a consumer is).
 */
export function whenJetStreamAnswers<T>(what: string, call: () => Promise<T>, { logger, budgetMs = JETSTREAM_START_UP_RETRY_MS }: { logger?: Logger | undefined; budgetMs?: number } = {}): Promise<T> {
  return pRetry(call, {
    retries: Number.POSITIVE_INFINITY,
    maxRetryTime: budgetMs,
    minTimeout: FIRST_RETRY_DELAY_MS,
    maxTimeout: LAST_RETRY_DELAY_MS,
    // Asked only while time is left, so "trying again" is logged only when it does.
    shouldRetry: ({ error, attemptNumber }) => {
      const transient = isTransientJetStreamError(error);
      if (transient) logger?.warn({ err: error, attempt: attemptNumber }, `${what}: JetStream did not answer yet; trying again`);
      return transient;
    },
  });
}
