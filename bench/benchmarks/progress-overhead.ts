import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { BenchContext } from "../context.js";
import { startReplica } from "../replicas.js";
import type { BenchmarkResult } from "../result.js";
import { round2 } from "../stats.js";

const run = promisify(execFile);
const TIMEOUT_MS = 300_000;
type Mode = "on" | "off";

/**
 * Progress overhead (issue 24, "Performance"): the same transcode run by a worker with progress reporting (ffmpeg's
 * `-progress` stream parsed, a core NATS message at most every 500 ms) and by one with `WORKER_PROGRESS=off` (no
 * `-progress` at all), in the same run. The system's worker is stopped meanwhile; each job gets a fresh worker
 * process of its mode, started before the job is submitted, and modes alternate which goes first in each round.
 * The figure is the ratio of median wall times (POST /jobs to `job.completed`), on / off.
 */
export async function benchProgressOverhead(ctx: BenchContext): Promise<BenchmarkResult> {
  const rounds = ctx.sizes.quick ? 1 : 5;
  const seconds = ctx.sizes.quick ? 3 : 20;
  const dir = await mkdtemp(join(tmpdir(), "rb-bench-progress-"));
  const clip = join(dir, "clip.mp4");
  await run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", `testsrc2=duration=${seconds}:size=1280x720:rate=30`, "-f", "lavfi", "-i", `sine=duration=${seconds}`, "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", clip]);
  const source = ctx.inputs.publish("progress-clip.mp4", clip);
  const samples: Record<Mode, Array<{ wallMs: number; progressMessages: number }>> = { on: [], off: [] };
  await ctx.env.system.kill("worker");
  try {
    for (let round = 0; round < rounds; round += 1) {
      for (const mode of round % 2 === 0 ? (["on", "off"] as const) : (["off", "on"] as const)) {
        const worker = await startReplica("worker", ctx.env.system.env, { extraEnv: { WORKER_PROGRESS: mode } });
        try {
          const sample = await transcode(ctx, source);
          samples[mode].push(sample);
          ctx.log(`  transcode, progress ${mode}, round ${round + 1}/${rounds}: ${(sample.wallMs / 1000).toFixed(2)} s, ${sample.progressMessages} progress messages`);
        } finally {
          await worker.stop();
        }
      }
    }
  } finally {
    await ctx.env.system.start("worker");
    await rm(dir, { recursive: true, force: true });
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const on = median(samples.on.map((s) => s.wallMs));
  const off = median(samples.off.map((s) => s.wallMs));
  const ratio = round2(on / off);
  return {
    id: "progress-overhead",
    title: "15. Progress reporting overhead: the same transcode with and without progress",
    baseline: "the same transcode by a worker with WORKER_PROGRESS=off, in the same run",
    columns: ["progress", "median wall s", "progress messages per job (median)"],
    rows: [
      ["on", round2(on / 1000), median(samples.on.map((s) => s.progressMessages))],
      ["off (WORKER_PROGRESS=off)", round2(off / 1000), median(samples.off.map((s) => s.progressMessages))],
      ["on / off", ratio, ""],
    ],
    targets: [],
    notes: [
      `${rounds} rounds of a ${seconds} s 1280x720 transcode (the job type's defaults), one fresh worker process per job, modes alternating which goes first.`,
      "Wall time is POST /jobs to the job.completed event; progress messages are those seen on jobs.progress.<org>.<job> (core NATS).",
    ],
    data: { rounds, seconds, on: samples.on, off: samples.off, ratio },
  };
}

async function transcode(ctx: BenchContext, source: string): Promise<{ wallMs: number; progressMessages: number }> {
  let jobId: string | undefined;
  let ended: { at: number; subject: string } | undefined;
  let wake: (() => void) | undefined;
  const progress = new Map<string, number>();
  const stopEvents = ctx.bus.listen<{ jobId: string }>("jobs.events.job.*", (event, subject) => {
    if (event.jobId === jobId && (subject.endsWith(".completed") || subject.endsWith(".failed") || subject.endsWith(".cancelled"))) {
      ended = { at: performance.now(), subject };
      wake?.();
    }
  });
  const stopProgress = ctx.bus.listen<{ jobId: string }>("jobs.progress.*.*", (event) => {
    progress.set(event.jobId, (progress.get(event.jobId) ?? 0) + 1);
  });
  try {
    const sentAt = performance.now();
    const response = await fetch(`${ctx.gatewayUrl}/jobs`, {
      method: "POST",
      headers: { authorization: `Bearer ${ctx.orgs.main.key}`, "content-type": "application/json" },
      body: JSON.stringify({ type: "transcode", params: {}, inputs: { source } }),
    });
    if (response.status !== 201) throw new Error(`POST /jobs answered ${response.status}: ${await response.text()}`);
    jobId = ((await response.json()) as { data: { id: string } }).data.id;
    const deadline = Date.now() + TIMEOUT_MS;
    while (!ended) {
      if (Date.now() > deadline) throw new Error(`job ${jobId} did not end within ${TIMEOUT_MS / 1000} s`);
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 1000);
      });
    }
    if (!ended.subject.endsWith(".completed")) throw new Error(`job ${jobId} ended ${ended.subject}`);
    return { wallMs: ended.at - sentAt, progressMessages: progress.get(jobId) ?? 0 };
  } finally {
    stopEvents();
    stopProgress();
  }
}
