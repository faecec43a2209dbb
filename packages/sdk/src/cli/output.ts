import type { Batch, Delivery, Job, SubmittedBatch } from "../types.js";

/** Where a command writes: stdout for results, stderr for progress and diagnostics (so `--json | jq` stays clean). */
export interface Output {
  json: boolean;
  out(line: string): void;
  err(line: string): void;
  /** stderr is a terminal: progress can redraw one line. */
  interactive: boolean;
}

export function processOutput(json: boolean): Output {
  return {
    json,
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    interactive: Boolean(process.stderr.isTTY),
  };
}

export const printJson = (output: Output, value: unknown) => output.out(JSON.stringify(value, null, 2));

const time = (ms: number | null | undefined) => (ms ? new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z") : "-");
export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

/** Columns padded to their widest cell. */
export function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length))) ?? [];
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join("  ")).join("\n");
}

export function jobLines(job: Job): string {
  const lines = [
    `${job.id}  ${job.type}  ${job.status}`,
    `  created    ${time(job.timing.createdAt)}`,
  ];
  if (job.timing.startedAt) lines.push(`  started    ${time(job.timing.startedAt)}`);
  if (job.timing.completedAt) lines.push(`  finished   ${time(job.timing.completedAt)}`);
  if (job.batchId) lines.push(`  batch      ${job.batchId}`);
  if (job.result) {
    const meta = job.result.metadata;
    const facts = [meta.durationMs !== null ? seconds(meta.durationMs) : null, meta.width && meta.height ? `${meta.width}x${meta.height}` : null, meta.fileSize !== null ? `${meta.fileSize} bytes` : null].filter(Boolean);
    lines.push(`  result     ${job.result.url}`);
    if (facts.length > 0) lines.push(`             ${facts.join(", ")}`);
  }
  if (job.cost) lines.push(`  cost       ${job.cost.credits} credits (${job.cost.breakdown})`);
  if (job.error) lines.push(`  error      ${job.error.code}: ${job.error.message}`);
  for (const delivery of job.webhookDeliveries) {
    lines.push(`  webhook    ${delivery.event} ${delivery.status} after ${delivery.attempts} attempt(s) (${delivery.id})`);
  }
  return lines.join("\n");
}

export function jobsTable(jobs: Job[]): string {
  if (jobs.length === 0) return "No jobs.";
  return table([["ID", "TYPE", "STATUS", "CREATED", "COST"], ...jobs.map((job) => [job.id, job.type, job.status, time(job.timing.createdAt), job.cost ? `${job.cost.credits}` : "-"])]);
}

export function batchesTable(batches: Batch[]): string {
  if (batches.length === 0) return "No batches.";
  const done = (batch: Batch) => batch.counts.completed + batch.counts.failed + batch.counts.cancelled;
  return table([["ID", "STATUS", "JOBS", "DONE", "FAILED", "CREATED"], ...batches.map((batch) => [batch.id, batch.status, `${batch.jobCount}`, `${done(batch)}`, `${batch.counts.failed}`, time(batch.timing.createdAt)])]);
}

export function batchLines(batch: Batch | SubmittedBatch): string {
  const lines = [`${batch.id}  ${batch.status}  ${batch.jobCount} job(s)`];
  if ("counts" in batch) {
    lines.push(`  counts     ${Object.entries(batch.counts).filter(([, count]) => count > 0).map(([status, count]) => `${status} ${count}`).join(", ") || "-"}`);
    lines.push(`  created    ${time(batch.timing.createdAt)}`);
    if (batch.timing.completedAt) lines.push(`  finished   ${time(batch.timing.completedAt)}`);
  }
  lines.push(`  jobs       ${batch.jobIds.join(" ")}`);
  return lines.join("\n");
}

export function deliveriesTable(deliveries: Delivery[]): string {
  if (deliveries.length === 0) return "No deliveries.";
  return table([
    ["ID", "EVENT", "STATUS", "ATTEMPTS", "LAST", "SUBJECT"],
    ...deliveries.map((delivery) => [
      delivery.id,
      delivery.event,
      delivery.status,
      String(delivery.attempts),
      delivery.lastResponseStatus !== null ? String(delivery.lastResponseStatus) : (delivery.lastError ?? "-"),
      delivery.jobId ?? delivery.batchId ?? "-",
    ]),
  ]);
}

export function deliveryLines(delivery: Delivery): string {
  const lines = [`${delivery.id}  ${delivery.event}  ${delivery.status}  ${delivery.url}`];
  for (const attempt of delivery.attemptLog) {
    lines.push(`  attempt ${attempt.attempt}  ${time(attempt.startedAt)}  ${attempt.responseStatus ?? attempt.error ?? "-"}  ${attempt.latencyMs} ms`);
  }
  return lines.join("\n");
}

export { time as formatTime };
