import type { Kysely } from "kysely";
import { STREAMS, type Bus, type BusMessage, type ConsumerHandle } from "@renderbus/bus";
import type { jobEvents } from "@renderbus/contracts";
import { currentTraceHeaders, type Logger } from "@renderbus/telemetry";
import type { DispatcherTables } from "../database.js";
import { GroupCommit } from "@renderbus/db";
import type { DeliveryRow } from "../deliveries/delivery.js";
import { insertDeliveries, type NewDelivery } from "../deliveries/insert-deliveries.js";
import { batchCompletedPayload, jobCompletedPayload, jobFailedPayload, jobRunningPayload } from "@renderbus/webhook-payloads";
import { completeBatchIfDone, recordBatchCreated, recordTerminalJob, type TerminalOutcome } from "../batches/batch-completion.js";
import { endpointsFor, type EndpointDirectory, type OrgEndpoints } from "../endpoints/endpoint-directory.js";
import type { DeliverySender, SlotTicket, SlotWait } from "../sending/delivery-sender.js";

/** The durable consumer every dispatcher replica shares (work sharing). */
export const DISPATCHER_DURABLE = "webhook-dispatcher";

/** The job events workOfJobEvent acts on; `job.queued`, `job.dispatched` and progress never reach the dispatcher. */
export const DISPATCHER_SUBJECTS = [
  "jobs.events.job.running",
  "jobs.events.job.completed",
  "jobs.events.job.failed",
  "jobs.events.job.cancelled",
  "jobs.events.batch.created",
];

export interface JobEventsConsumerOptions {
  bus: Bus;
  db: Kysely<DispatcherTables>;
  /** The org's endpoints (its webhookUrl among them): each matching one gets its own delivery. */
  endpoints: EndpointDirectory;
  logger: Logger;
  concurrency: number;
  ackWaitMs: number;
  /** Attempts the deliveries created: fresh ones straight from the insert, others through its claims. */
  sender: FreshDeliverySender;
  /** How long an event owing deliveries waits for a free attempt slot before they are written for a claim instead. */
  slotWait: SlotWait;
}

/** What ingest needs of the delivery sender. */
export type FreshDeliverySender = Pick<DeliverySender, "wake" | "lease" | "admit" | "reserve" | "launch">;

/** What one job event means for the dispatcher (not a billing plan). */
export interface JobEventWork {
  orgId: string;
  /** A webhook to send, when the org takes webhooks. */
  webhook?: { event: string; jobId: string; body: unknown; eventAt: number };
  terminal?: { batchId: string; jobId: string; outcome: TerminalOutcome };
  batchCreated?: { batchId: string; jobCount: number; createdAt: number };
}

/** Maps a job event (subject + body) to the dispatcher's work; pure. Undefined for events it ignores. */
export function workOfJobEvent(subject: string, data: unknown): JobEventWork | undefined {
  switch (subject) {
    case "jobs.events.job.running": {
      const started = data as jobEvents.JobStarted;
      return { orgId: started.orgId, webhook: { event: "job.running", jobId: started.jobId, body: jobRunningPayload(started), eventAt: started.startedAt } };
    }
    case "jobs.events.job.completed": {
      const completed = data as jobEvents.JobCompleted;
      return {
        orgId: completed.orgId,
        webhook: { event: "job.completed", jobId: completed.jobId, body: jobCompletedPayload(completed), eventAt: completed.timing?.completedAt ?? Date.now() },
        ...(completed.batchId ? { terminal: { batchId: completed.batchId, jobId: completed.jobId, outcome: "completed" as const } } : {}),
      };
    }
    case "jobs.events.job.failed": {
      const failed = data as jobEvents.JobFailed;
      return {
        orgId: failed.orgId,
        webhook: { event: "job.failed", jobId: failed.jobId, body: jobFailedPayload(failed), eventAt: failed.timing?.completedAt ?? Date.now() },
        ...(failed.batchId ? { terminal: { batchId: failed.batchId, jobId: failed.jobId, outcome: "failed" as const } } : {}),
      };
    }
    case "jobs.events.job.cancelled": {
      // No webhook for cancelled jobs (docs/webhooks.md); they still count toward their batch.
      const cancelled = data as jobEvents.JobCancelled;
      return {
        orgId: cancelled.orgId,
        ...(cancelled.batchId ? { terminal: { batchId: cancelled.batchId, jobId: cancelled.jobId, outcome: "cancelled" as const } } : {}),
      };
    }
    case "jobs.events.batch.created": {
      const created = data as jobEvents.BatchCreated;
      return { orgId: created.orgId, batchCreated: { batchId: created.batchId, jobCount: created.jobIds.length, createdAt: created.createdAt } };
    }
    default:
      return undefined;
  }
}

/** An event ready to be written: its work and the deliveries it owes (built once, before it waits for a slot). */
interface PlannedEvent {
  eventId: string;
  work: JobEventWork;
  deliveries: NewDelivery[];
  /** The attempt slots it was admitted with (none when it waited too long or owes nothing to lease). */
  ticket?: SlotTicket;
}

/**
 * The webhook deliveries an event owes: one per endpoint of its org whose filter matches (none when the plan has no
 * webhooks). A disabled endpoint's delivery is stored `skipped`.
 */
function deliveriesOf(
  eventId: string,
  work: JobEventWork,
  org: OrgEndpoints | undefined,
  /** The event's trace (groups mix events of many traces), stored with its delivery. */
  traceHeaders: Record<string, string>,
): NewDelivery[] {
  const webhook = work.webhook;
  if (!webhook || !org) return [];
  const body = JSON.stringify(webhook.body);
  return endpointsFor(org, webhook.event).map((endpoint) => ({
    orgId: work.orgId,
    event: webhook.event,
    sourceEventId: eventId,
    jobId: webhook.jobId,
    batchId: work.terminal?.batchId ?? null,
    url: endpoint.url,
    body,
    eventAt: webhook.eventAt,
    traceHeaders,
    endpointId: endpoint.id,
    skipped: !endpoint.enabled,
    ordered: endpoint.ordering === "fifo",
  }));
}

/** Attempt slots an event's deliveries could be leased at insert (batch bookkeeping and FIFO endpoints take none). */
function leasableSlots(event: PlannedEvent): number {
  if (event.work.terminal || event.work.batchCreated) return 0;
  return event.deliveries.filter((delivery) => !delivery.skipped && !delivery.ordered).length;
}

/**
 * Writes planned events. Events with batch bookkeeping go in one transaction, each guarded by `processed_events` (a
 * redelivered event must not count toward its batch twice), then batch progress and deliveries. Nearly every group has
 * none (job events outside batches): its deliveries are written by a single statement, deduplicated by their source
 * event, and as many as the sender has free slots for are inserted leased to it and attempted at once (no claim).
 * Returns, per event, whether a delivery was created that still waits for a claim.
 */
async function writePlannedEvents(db: Kysely<DispatcherTables>, sender: FreshDeliverySender, events: PlannedEvent[]): Promise<boolean[]> {
  const tickets = events.flatMap((event) => (event.ticket ? [event.ticket] : []));
  if (events.every(({ work }) => !work.batchCreated && !work.terminal)) {
    const deliveries = events.flatMap((event) => event.deliveries);
    const slots = sender.reserve(deliveries.length, tickets);
    let created: DeliveryRow[] = [];
    try {
      const now = Date.now();
      const { token, ms, orgMaxInFlight } = sender.lease;
      created = await insertDeliveries(db, deliveries, { now, lease: { token, until: now + ms, limit: slots, orgMaxInFlight } });
    } finally {
      // The slots the insert did not lease (all of them when it failed) go back to the claims.
      sender.launch(
        created.filter((row) => row.lease_token !== null),
        slots,
      );
    }
    const waiting = new Set(created.flatMap((row) => (row.lease_token === null && row.source_event_id !== null ? [row.source_event_id] : [])));
    return events.map((event) => waiting.has(event.eventId));
  }
  // This path leases nothing: the slots its events were admitted with go back.
  sender.reserve(0, tickets);
  return db.transaction().execute(async (trx) => {
    const now = Date.now();
    const fresh = new Set(
      (
        await trx
          .insertInto("processed_events")
          .values(events.map((event) => ({ event_id: event.eventId, processed_at: now })))
          .onConflict((conflict) => conflict.column("event_id").doNothing())
          .returning("event_id")
          .execute()
      ).map((row) => row.event_id),
    );
    const deliveries: NewDelivery[] = [];
    for (const event of events) {
      const { eventId, work } = event;
      if (!fresh.has(eventId)) continue;
      // A batch's events are few next to its jobs' events: these stay one statement each.
      if (work.batchCreated) await recordBatchCreated(trx, { batchId: work.batchCreated.batchId, orgId: work.orgId, jobCount: work.batchCreated.jobCount, createdAt: work.batchCreated.createdAt });
      if (work.terminal) await recordTerminalJob(trx, work.terminal);
      deliveries.push(...event.deliveries);
    }
    const created = new Set((await insertDeliveries(trx, deliveries, { now })).flatMap((row) => (row.source_event_id ? [row.source_event_id] : [])));
    return events.map((event) => created.has(event.eventId));
  });
}

/**
 * Turns job events into deliveries and batch progress. Events are written in groups (one transaction for the events
 * that arrive while the previous group commits), then acked one by one; a crash before the ack redelivers an event,
 * and its repeat is a no-op (a delivery is unique per source event; batch bookkeeping is guarded by
 * `processed_events`). The batch-completion check runs after that commit, on every delivery of the event (see
 * completeBatchIfDone).
 */
export async function startJobEventsConsumer(options: JobEventsConsumerOptions): Promise<ConsumerHandle> {
  const { db, endpoints, logger } = options;

  const createBatchDelivery = async (batchId: string, eventId: string): Promise<boolean> =>
    db.transaction().execute(async (trx) => {
      const batch = await completeBatchIfDone(trx, batchId);
      if (!batch) return false;
      logger.info({ batchId, orgId: batch.orgId, counts: batch.counts }, "batch completed");
      // Looked up inside the transaction: if the auth service is down, the completion rolls back and is redone.
      const org = await endpoints.get(batch.orgId);
      const body = JSON.stringify(batchCompletedPayload(batch));
      const created = await insertDeliveries(
        trx,
        endpointsFor(org, "batch.completed").map((endpoint) => ({
          orgId: batch.orgId,
          event: "batch.completed",
          sourceEventId: `batch.completed:${batchId}`,
          jobId: null,
          batchId,
          url: endpoint.url,
          body,
          eventAt: batch.completedAt,
          endpointId: endpoint.id,
          skipped: !endpoint.enabled,
          ordered: endpoint.ordering === "fifo",
        })),
      );
      logger.debug({ batchId, eventId }, "batch.completed delivery created");
      return created.length > 0;
    });

  const writer = new GroupCommit<PlannedEvent, boolean>((events) => writePlannedEvents(db, options.sender, events), options.concurrency);

  const handle = async (message: BusMessage<unknown>): Promise<void> => {
    const work = workOfJobEvent(message.subject, message.data);
    if (!work) return;
    const eventId = message.msgId || `${message.subject}#${message.streamSequence}`;
    // Resolve the target before the transaction: no connection is held during the network call.
    const org = work.webhook ? await endpoints.get(work.orgId) : undefined;
    const planned: PlannedEvent = { eventId, work, deliveries: deliveriesOf(eventId, work, org, currentTraceHeaders()) };
    // In a burst every slot is busy: the event waits here (unacked, in JetStream's hands) for one, rather than in
    // the table for a claim, so its delivery is written leased and attempted at once.
    const slots = leasableSlots(planned);
    if (slots > 0) planned.ticket = await options.sender.admit(slots, options.slotWait);
    // True when a delivery was created that waits for a claim (the sender attempts leased ones already).
    let waiting = await writer.submit(planned);
    const batchId = work.terminal?.batchId ?? work.batchCreated?.batchId;
    if (batchId && (await createBatchDelivery(batchId, eventId))) waiting = true;
    if (waiting) options.sender.wake();
  };

  return options.bus.consume({
    stream: STREAMS.jobEvents,
    durable: DISPATCHER_DURABLE,
    filterSubjects: DISPATCHER_SUBJECTS,
    // Until 2026-11 one unfiltered durable of this name took every job event; the per-subject ones continue from it.
    replaces: [DISPATCHER_DURABLE],
    ackWaitMs: options.ackWaitMs,
    concurrency: options.concurrency,
    maxAckPending: 2000,
    retryDelayMs: 1000,
    handler: handle,
  });
}
