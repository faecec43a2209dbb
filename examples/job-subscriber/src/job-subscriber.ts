import { Bus, STREAMS, type ConsumerHandle } from "@renderbus/bus";
import type { jobEvents } from "@renderbus/contracts";
import type { Logger } from "@renderbus/telemetry";

/** A job event as this subscriber sees it (docs/events.md, docs/asyncapi.yaml). */
export interface ReceivedJobEvent {
  /** `job.completed`, `job.failed`, ... (the subject without `jobs.events.`). */
  event: string;
  /** The event id (`Nats-Msg-Id`): dedupe on it, JetStream may deliver an event twice. */
  eventId: string;
  orgId: string;
  jobId: string | undefined;
  /** The payload: the proto3 JSON form of the event's message (`jobEvents.JobCompleted`, ...). */
  data: unknown;
}

export interface JobSubscriberOptions {
  natsUrl: string;
  /** The subscribing service's own durable name: replicas of the service share it, other services use their own. */
  durable: string;
  /** Subject/stream prefix (empty in production; tests isolate themselves with it). */
  namespace?: string;
  /** `new` skips the history kept in the stream (7 days) when the durable is first created. */
  deliverPolicy?: "all" | "new";
  logger?: Logger;
  onEvent(event: ReceivedJobEvent): Promise<void> | void;
}

export interface JobSubscriber {
  stop(): Promise<void>;
}

/**
 * Consumes `jobs.events.>` with a durable consumer of its own, as any internal service would (the auth service's
 * charges and the webhook dispatcher work the same way). The consumer survives restarts: the subscriber resumes
 * after the last event it acknowledged. `onEvent` must be idempotent: an event is redelivered when the process
 * dies before the ack, and a handler that throws gets the event again a second later.
 */
export async function startJobSubscriber(options: JobSubscriberOptions): Promise<JobSubscriber> {
  // Credentials: NATS_USER / NATS_PASSWORD from the environment (its own read-only user, `job-subscriber`).
  const bus = await Bus.connect({ url: options.natsUrl, name: options.durable, namespace: options.namespace ?? "", ...(options.logger ? { logger: options.logger } : {}) });
  await waitForStream(bus, options.logger);
  const consumer: ConsumerHandle = await bus.consume<{ jobId?: string; orgId?: string }>({
    stream: STREAMS.jobEvents,
    durable: options.durable,
    filterSubjects: ["jobs.events.>"],
    deliverPolicy: options.deliverPolicy ?? "all",
    ackWaitMs: 30_000,
    handler: async (message) => {
      await options.onEvent({
        event: message.headers["Rb-Event-Type"] || message.subject.replace(/^jobs\.events\./, ""),
        eventId: message.msgId,
        orgId: message.headers["Rb-Org-Id"] || message.data.orgId || "",
        jobId: message.data.jobId,
        data: message.data,
      });
    },
  });
  return {
    async stop() {
      await consumer.stop();
      await bus.close();
    },
  };
}

/**
 * Waits until the jobs service has declared `JOBS_EVENTS`. A subscriber only reads: its NATS user may not create or
 * change streams (docs/events.md, permissions), so it cannot declare the stream itself.
 */
async function waitForStream(bus: Bus, logger: Logger | undefined): Promise<void> {
  const stream = bus.streamName(STREAMS.jobEvents);
  for (let attempt = 0; ; attempt++) {
    try {
      await bus.jsm.streams.info(stream);
      return;
    } catch (error) {
      if (!/not found/i.test(String(error))) throw error;
      if (attempt === 0) logger?.warn({ stream }, "waiting for the jobs service to declare the stream");
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

/** One line per event, for a terminal. */
export function describeJobEvent(event: ReceivedJobEvent): string {
  const data = event.data as Partial<jobEvents.JobCompleted & jobEvents.JobFailed & jobEvents.BatchCreated>;
  const detail =
    event.event === "job.completed" ? `${data.cost?.credits ?? 0} credits, ${data.result?.url ?? ""}` :
    event.event === "job.failed" ? `${data.error?.code}: ${data.error?.message}` :
    event.event === "batch.created" ? `${data.jobIds?.length ?? 0} jobs` : "";
  return [event.event.padEnd(15), event.jobId ?? data.batchId ?? "", event.orgId, detail].filter(Boolean).join("  ");
}
