import { sql, type Kysely } from "kysely";
import { z } from "zod";
import { JOB_PROGRESS_SUBJECTS, type Bus } from "@renderbus/bus";
import type { Logger } from "@renderbus/telemetry";
import { jobProgressPayload, type JobProgressReading } from "@renderbus/webhook-payloads";
import type { DispatcherTables } from "../database.js";
import { insertDeliveries } from "../deliveries/insert-deliveries.js";
import { endpointsFor, type EndpointDirectory } from "../endpoints/endpoint-directory.js";

/** The core NATS queue group of the dispatcher replicas: each progress message reaches one of them. */
export const PROGRESS_QUEUE_GROUP = "webhook-dispatcher-progress";
/** The event name of progress webhooks (opt-in: an endpoint must name it). */
export const JOB_PROGRESS_EVENT = "job.progress";

/** A progress message as the worker publishes it; checked before anything is signed and sent. */
const progressMessage = z.object({
  orgId: z.string().regex(/^[A-Za-z0-9_-]{1,100}$/),
  jobId: z.string().regex(/^[A-Za-z0-9_-]{1,100}$/),
  percent: z.number().min(0).max(100).nullable(),
  etaMs: z.number().int().min(0).max(7 * 24 * 3_600_000).nullable(),
  updatedAt: z.number().int().positive(),
  timing: z.object({ createdAt: z.number().int().positive(), startedAt: z.number().int().positive() }).optional(),
});

export interface JobProgressListenerOptions {
  bus: Pick<Bus, "listen">;
  db: Kysely<DispatcherTables>;
  endpoints: EndpointDirectory;
  logger: Logger;
  /** At most one `job.progress` delivery per (endpoint, job) this often (WEBHOOK_PROGRESS_INTERVAL_MS, 5 s). */
  intervalMs: number;
  /** Readings handled at once; readings beyond are dropped (progress webhooks are best-effort). */
  maxInFlight: number;
  /** Wakes the sender's claim loop once deliveries were created. */
  wake(): void;
}

export interface JobProgressListener {
  /** Readings handled so far (each with or without a delivery); tests wait on it. */
  readonly handled: number;
  /** Readings dropped because `maxInFlight` were being handled. */
  readonly dropped: number;
  stop(): Promise<void>;
}

/**
 * Turns the workers' live progress (core NATS, `jobs.progress.<org>.<job>`, at most every 500 ms per job) into
 * opt-in `job.progress` webhooks (docs/webhooks.md, "Progress events"): for each endpoint of the job's org that names
 * `job.progress`, at most one delivery per job every `intervalMs`, across every replica.
 *
 * The replicas share one queue group, so each reading is looked at once. An org without such an endpoint costs a
 * cached directory lookup and nothing else. Otherwise `progress_throttle` decides, in the statement that moves it
 * forward on PostgreSQL's clock (the replicas' clocks play no part): a row per (endpoint, job) whose `last_sent_at`
 * is updated only when it is at least `intervalMs` old, and each endpoint whose row moved gets a delivery, in the same
 * transaction, signed and retried like every other. A replica also remembers what it sent, so the readings of the
 * next 5 s skip the database. Best-effort: a reading that arrives while no replica runs, or that finds the database
 * or the auth service down, is lost; the next one (0.5 s later) takes its place.
 */
export function startJobProgressListener(options: JobProgressListenerOptions): JobProgressListener {
  const { db, endpoints, logger, intervalMs, maxInFlight } = options;
  const inFlight = new Set<Promise<void>>();
  /** `${orgId}/${jobId}` -> when this replica last created its deliveries (local clock): a first, cheap filter. */
  const recentlySent = new Map<string, number>();
  let handled = 0;
  let dropped = 0;
  let lastWarnedAt = 0;

  const handle = async (reading: JobProgressReading): Promise<void> => {
    const key = `${reading.orgId}/${reading.jobId}`;
    const sentAt = recentlySent.get(key);
    if (sentAt !== undefined && Date.now() - sentAt < intervalMs) return;
    const org = await endpoints.get(reading.orgId);
    const targets = endpointsFor(org, JOB_PROGRESS_EVENT).filter((endpoint) => endpoint.enabled);
    if (targets.length === 0) return;
    const body = JSON.stringify(jobProgressPayload(reading));
    const { moved, created } = await db.transaction().execute(async (trx) => {
      // Moves each endpoint's row forward when its last delivery is old enough; the rows it returns get one now.
      const { rows } = await sql<{ endpoint_id: string; last_sent_at: string }>`
        insert into progress_throttle as t (org_id, endpoint_id, job_id, last_sent_at)
        select ${reading.orgId}, endpoint_id, ${reading.jobId}, (extract(epoch from clock_timestamp()) * 1000)::bigint
        from unnest(${targets.map((endpoint) => endpoint.id)}::text[]) as e(endpoint_id)
        on conflict (org_id, endpoint_id, job_id) do update set last_sent_at = excluded.last_sent_at
          where t.last_sent_at <= excluded.last_sent_at - ${intervalMs}
        returning endpoint_id, last_sent_at`.execute(trx);
      const due = new Map(rows.map((row) => [row.endpoint_id, Number(row.last_sent_at)]));
      if (due.size === 0) return { moved: false, created: [] };
      const inserted = await insertDeliveries(
        trx,
        targets
          .filter((endpoint) => due.has(endpoint.id))
          .map((endpoint) => ({
            orgId: reading.orgId,
            event: JOB_PROGRESS_EVENT,
            sourceEventId: `job.progress:${reading.jobId}:${due.get(endpoint.id)}`,
            jobId: reading.jobId,
            batchId: null,
            url: endpoint.url,
            body,
            eventAt: reading.updatedAt,
            endpointId: endpoint.id,
            ordered: endpoint.ordering === "fifo",
          })),
      );
      return { moved: true, created: inserted };
    });
    if (!moved) return;
    recentlySent.set(key, Date.now());
    if (recentlySent.size > 100_000) {
      const cutoff = Date.now() - intervalMs;
      for (const [each, at] of recentlySent) if (at < cutoff) recentlySent.delete(each);
      while (recentlySent.size > 100_000) recentlySent.delete(recentlySent.keys().next().value as string);
    }
    if (created.length > 0) options.wake();
  };

  const unsubscribe = options.bus.listen<unknown>(
    JOB_PROGRESS_SUBJECTS,
    (data, subject) => {
      const parsed = progressMessage.safeParse(data);
      // The subject names the job too: a body that disagrees with it is not believed.
      if (!parsed.success || subject !== `jobs.progress.${parsed.data.orgId}.${parsed.data.jobId}`) return;
      if (inFlight.size >= maxInFlight) {
        dropped += 1;
        return;
      }
      const work: Promise<void> = handle(parsed.data)
        .catch((error: unknown) => {
          // Readings come twice a second per job: one warning per 10 s says enough while a dependency is down.
          const now = Date.now();
          if (now - lastWarnedAt < 10_000) return;
          lastWarnedAt = now;
          logger.warn({ err: error, orgId: parsed.data.orgId, jobId: parsed.data.jobId }, "job.progress webhook dropped");
        })
        .finally(() => {
          handled += 1;
          inFlight.delete(work);
        });
      inFlight.add(work);
    },
    { queue: PROGRESS_QUEUE_GROUP },
  );

  return {
    get handled() {
      return handled;
    },
    get dropped() {
      return dropped;
    },
    async stop() {
      unsubscribe();
      await Promise.allSettled([...inFlight]);
    },
  };
}
