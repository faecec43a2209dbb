import { createDatabase, appendToStream, enqueueOutbox, type EventStoreTables } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import { latencyRecorder, percentilesOf } from "./latency-histogram.js";
import type { LoadResult, LoadSpec } from "./load-spec.js";

/**
 * The baseline of `POST /jobs`: what the event store alone sustains. Each operation is one transaction appending a
 * JobQueued-sized event to a new stream plus its outbox row, as the jobs service does, with nothing around it.
 */
export async function runAppendLoad(spec: Extract<LoadSpec, { kind: "append" }>): Promise<LoadResult> {
  const database = createDatabase<EventStoreTables>({ url: spec.databaseUrl, schema: spec.schema, maxConnections: spec.concurrency, applicationName: "bench-append" });
  // Open every connection before the clock starts: the load measures appends, not PostgreSQL forking backends.
  const clients = await Promise.all(Array.from({ length: spec.concurrency }, () => database.pool.connect()));
  for (const client of clients) client.release();
  const latencies = latencyRecorder();
  let errors = 0;
  const started = performance.now();
  const deadline = started + spec.durationSeconds * 1000;
  const worker = async () => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      const jobId = newId("job");
      const data = { jobId, orgId: "org_bench", type: "extract.metadata", inputs: { source: "http://127.0.0.1/clip.mp4" }, params: {}, metadata: {}, createdAt: Date.now() };
      try {
        await database.db.transaction().execute(async (trx) => {
          const [stored] = await appendToStream(trx, jobId, 0, [{ type: "JobQueued", data }]);
          await enqueueOutbox(trx, [{ messageId: stored!.eventId, subject: "jobs.events.job.queued", body: data, headers: { "Rb-Event-Type": "job.queued" } }]);
        });
        latencies.record(performance.now() - t0);
      } catch {
        errors += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: spec.concurrency }, worker));
  const elapsedMs = performance.now() - started;
  await database.close();
  const latencyHistogram = latencies.encode();
  return { ok: latencies.count, errors, perSecond: latencies.count / (elapsedMs / 1000), ...percentilesOf(latencyHistogram), elapsedMs, latencyHistogram };
}
