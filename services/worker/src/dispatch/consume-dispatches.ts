import { DISPATCH_DURABLE, DISPATCH_MAX_DELIVER, dispatchRetryDelayMs, flattenHeaders, nanos, STREAMS, type Bus } from "@renderbus/bus";
import type { jobEvents } from "@renderbus/contracts";
import { contextFromTraceHeaders, tracer, type Logger } from "@renderbus/telemetry";

// Types reached through the Bus so the worker needs no direct dependency on the NATS and OpenTelemetry packages.
type ConsumerConfig = NonNullable<Parameters<Bus["jsm"]["consumers"]["add"]>[1]>;
type PullConsumer = Awaited<ReturnType<Bus["js"]["consumers"]["get"]>>;
type JsMsg = NonNullable<Awaited<ReturnType<PullConsumer["next"]>>>;
/** OpenTelemetry's SpanKind.CONSUMER. */
const SPAN_KIND_CONSUMER = 4;

/** The durable consumer every worker replica shares: each dispatch goes to exactly one of them. */
export const WORKERS_DURABLE = DISPATCH_DURABLE;

export interface ConsumeDispatchesOptions {
  bus: Bus;
  logger: Logger;
  /** Jobs run at once by this process. */
  concurrency: number;
  /** Unacked messages come back after this long; heartbeats (`working()`) keep a long job's message. */
  ackWaitMs: number;
  /** First delay before a dispatch whose handler threw is delivered again (default 5 s, doubling up to 12 times it). */
  retryBaseMs?: number;
  /**
   * Runs one job; resolving acks the message, `{ retryAfterMs }` naks it, `{ term }` ends its deliveries for good
   * (the job was failed), throwing naks it after a delay.
   */
  handle(dispatch: jobEvents.JobDispatch, delivery: DispatchDelivery): Promise<void | { retryAfterMs: number } | { term: string }>;
}

/** One delivery of a dispatch message. */
export interface DispatchDelivery {
  /** 1 for the first delivery; naks and expired ack deadlines (a crashed holder) each add one. */
  deliveryCount: number;
  /**
   * Settles the message now, outside the handler (a dying process handing back or ending its jobs). `term` ends its
   * deliveries; the reason is for logs (it is not sent: nats-server 2.9 would not recognise the term).
   */
  settle(how: { retryAfterMs: number } | { term: string }): void;
}

export interface DispatchConsumer {
  /** Stops fetching and waits for the jobs in hand to settle (the handler decides to ack or nak them). */
  stop(): Promise<void>;
  /** False while the workers' durable is missing and being declared again: no job can be taken meanwhile. */
  isReady(): boolean;
}

const FETCH_EXPIRES_MS = 2000;
/** How often the workers' durable is checked for existence (declared again when deleted). */
const DURABLE_CHECK_INTERVAL_MS = 5000;

/**
 * Pulls work one message per free slot. Unlike a prefetching consumer, no message waits in a local buffer while
 * other jobs run (which would let its ack deadline lapse and hand it to a second worker), so a job is only ever
 * taken by a worker that can start it now.
 */
export async function consumeDispatches(options: ConsumeDispatchesOptions): Promise<DispatchConsumer> {
  const { bus, logger } = options;
  const stream = bus.streamName(STREAMS.jobDispatch);
  const config: ConsumerConfig = {
    durable_name: WORKERS_DURABLE,
    ack_policy: "explicit" as ConsumerConfig["ack_policy"],
    ack_wait: nanos(options.ackWaitMs),
    max_ack_pending: 10_000,
    max_deliver: DISPATCH_MAX_DELIVER,
    deliver_policy: "all" as ConsumerConfig["deliver_policy"],
    filter_subject: bus.subject("jobs.dispatch.>"),
  };
  const ensureDurable = async (): Promise<void> => {
    try {
      await bus.jsm.consumers.info(stream, WORKERS_DURABLE);
      await bus.jsm.consumers.update(stream, WORKERS_DURABLE, config);
    } catch (error) {
      if (!String(error).includes("not found")) throw error;
      await bus.jsm.consumers.add(stream, config).catch((addError: unknown) => {
        // Another replica created it first.
        if (!/already (in use|exists)/.test(String(addError))) throw addError;
      });
    }
  };
  await ensureDurable();
  // The durable deleted under running workers (an operator, a rollout) is declared again, once for all slots;
  // otherwise every fetch would come back empty from then on and no job would ever be taken again (finding 17).
  let redeclaring: Promise<void> | undefined;
  let durableMissing = false;
  const redeclare = () =>
    (redeclaring ??= ((durableMissing = true), ensureDurable())
      .then(() => {
        durableMissing = false;
        logger.info("dispatch durable declared again");
      })
      .catch((error: unknown) => logger.warn({ err: error }, "declaring the dispatch durable again failed"))
      .finally(() => (redeclaring = undefined)));
  const consumer = await bus.js.consumers.get(stream, WORKERS_DURABLE);
  let stopped = false;
  // A fetch from a deleted durable mostly just comes back empty, like an idle queue: look for it now and then.
  const durableCheck = setInterval(() => {
    bus.jsm.consumers.info(stream, WORKERS_DURABLE).catch((error: unknown) => {
      if (!stopped && String((error as Error)?.message ?? error).includes("not found")) {
        logger.error("the dispatch durable is gone; declaring it again");
        void redeclare();
      }
    });
  }, DURABLE_CHECK_INTERVAL_MS);
  durableCheck.unref();

  const handleOne = async (msg: JsMsg): Promise<void> => {
    const headers = flattenHeaders(msg.headers);
    const heartbeat = setInterval(() => msg.working(), Math.max(1000, Math.floor(options.ackWaitMs / 3)));
    try {
      await tracer().startActiveSpan(
        // Named after the job type: the subject's last token is the job id, one span name per job otherwise.
        `consume ${bus.logicalSubject(msg.subject).replace(/\.job_[0-9A-Za-z]+$/, "")}`,
        { kind: SPAN_KIND_CONSUMER },
        contextFromTraceHeaders(headers),
        async (span) => {
          try {
            let dispatch: jobEvents.JobDispatch;
            try {
              dispatch = msg.json<jobEvents.JobDispatch>();
            } catch {
              // Not JSON: no delivery will ever parse it (ids only in logs: the body may hold presigned URLs).
              logger.error({ streamSequence: msg.seq, deliveryCount: msg.info.deliveryCount }, "unparsable dispatch message terminated");
              msg.term();
              return;
            }
            // A bare +TERM: nats-server 2.9 ignores `+TERM <reason>` (reasons came in 2.10) and would redeliver.
            const settle = (how: { retryAfterMs: number } | { term: string }) => ("term" in how ? msg.term() : msg.nak(how.retryAfterMs));
            const outcome = await options.handle(dispatch, { deliveryCount: msg.info.deliveryCount, settle });
            if (outcome) settle(outcome);
            else await msg.ackAck().catch(() => msg.ack());
          } catch (error) {
            logger.warn({ err: error, deliveryCount: msg.info.deliveryCount }, "dispatch failed; it will be retried");
            msg.nak(dispatchRetryDelayMs(msg.info.deliveryCount, options.retryBaseMs));
          } finally {
            span.end();
          }
        },
      );
    } finally {
      clearInterval(heartbeat);
    }
  };

  const slot = async (): Promise<void> => {
    while (!stopped) {
      let msg: JsMsg | null;
      try {
        msg = await consumer.next({ expires: FETCH_EXPIRES_MS });
      } catch (error) {
        if (stopped) return;
        logger.warn({ err: error }, "fetching work failed; retrying");
        if (/consumer (not found|deleted)/i.test(String((error as Error)?.message ?? error))) await redeclare();
        await new Promise((resolve) => setTimeout(resolve, 1000));
        continue;
      }
      if (!msg) continue;
      if (stopped) {
        msg.nak();
        return;
      }
      await handleOne(msg);
    }
  };

  const slots = Array.from({ length: options.concurrency }, () => slot());
  return {
    async stop() {
      stopped = true;
      clearInterval(durableCheck);
      await Promise.allSettled(slots);
    },
    isReady: () => !durableMissing,
  };
}
