import type { BenchContext } from "../context.js";
import type { BenchmarkResult } from "../result.js";
import { round1 } from "../stats.js";

/**
 * Benchmark 7 (issue 10): one batch of `extract.metadata` jobs on a local file, from `POST /batches` to the
 * receiver getting `batch.completed`. No target: the figures are for reference (they are bound by ffprobe and the
 * worker's concurrency on this machine).
 */
export async function benchBatchEndToEnd(ctx: BenchContext): Promise<BenchmarkResult> {
  const count = ctx.sizes.batchJobs;
  ctx.receiver.reset();
  const started = Date.now();
  const response = await fetch(`${ctx.gatewayUrl}/batches`, {
    method: "POST",
    headers: { authorization: `Bearer ${ctx.orgs.batch.key}`, "content-type": "application/json" },
    body: JSON.stringify({ jobs: Array.from({ length: count }, () => ({ type: "extract.metadata", inputs: { source: ctx.inputs.clipUrl } })) }),
  });
  const acceptedAt = Date.now();
  if (response.status !== 201) throw new Error(`POST /batches answered ${response.status}: ${await response.text()}`);
  const batchId = ((await response.json()) as { data: { id: string } }).data.id;
  ctx.log(`  batch ${batchId} of ${count} accepted in ${acceptedAt - started} ms`);
  await ctx.receiver.waitFor((r) => r.event === "batch.completed" && r.body.batchId === batchId, 1, count * 1000 + 60_000);
  const done = ctx.receiver.received.find((r) => r.event === "batch.completed" && r.body.batchId === batchId)!;
  const counts = (done.body as { counts?: Record<string, number> }).counts ?? {};
  const completedJobs = ctx.receiver.received.filter((r) => r.event === "job.completed").map((r) => r.receivedAt);
  const seconds = (done.receivedAt - started) / 1000;
  return {
    id: "batch-end-to-end",
    title: `7. End-to-end: a batch of ${count} extract.metadata jobs`,
    baseline: "none (reference figures)",
    columns: ["jobs", "POST /batches ms", "time to batch.completed s", "jobs/s", "completed", "failed", "job.completed webhooks"],
    rows: [[count, acceptedAt - started, round1(seconds), round1(count / seconds), counts.completed ?? 0, counts.failed ?? 0, completedJobs.length]],
    targets: [],
    notes: ["Measured from sending POST /batches to the receiver getting batch.completed; the worker runs with its default concurrency (WORKER_CONCURRENCY=2) on this 2-core machine."],
    data: { count, acceptMs: acceptedAt - started, secondsToBatchCompleted: seconds, jobsPerSecond: count / seconds, counts },
  };
}
