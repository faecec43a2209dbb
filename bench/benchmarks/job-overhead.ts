import { execFile, spawn } from "node:child_process";
import { link, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { parseJobParams, type ThumbnailParams, type TranscodeParams } from "@renderbus/job-types";
import { mediaCaps } from "../../services/worker/src/media/media-caps.js";
import { capOutputDuration } from "../../services/worker/src/providers/provider.js";
import { guardedFfmpegArgs } from "../../services/worker/src/providers/run-ffmpeg.js";
import { buildThumbnailArgs } from "../../services/worker/src/providers/thumbnail.js";
import { buildTranscodeArgs } from "../../services/worker/src/providers/transcode.js";
import { cpuSecondsFor, sandboxCommand, sandboxSettings, selfTestBwrap, type SandboxSettings } from "../../services/worker/src/sandbox/sandbox.js";
import type { BenchContext } from "../context.js";
import type { BenchmarkResult, TargetCheck } from "../result.js";
import { round2 } from "../stats.js";

const run = promisify(execFile);

/** The source: 30 s of 1280x720 H.264 at 30 fps with AAC audio, made once per run (12 s in a quick run, which checks the machinery). */
const SOURCE_SECONDS = 30;
const QUICK_SOURCE_SECONDS = 12;
const OVERHEAD_TARGET = 1.05;
// What the worker's run-ffmpeg adds to the sandbox limits (FILE_SIZE_SLACK_BYTES there).
const FILE_SIZE_SLACK_BYTES = 64 * 1024 * 1024;
const TIMEOUT_MS = 300_000;

/** One job measured three ways: through Renderbus, as the provider's ffmpeg command bare, and that command sandboxed. */
interface Measured {
  type: "transcode" | "thumbnail";
  params: Record<string, unknown>;
  /** The provider's ffmpeg arguments (before the worker's guards) for an input and output path. */
  args(input: string, output: string): string[];
  outputName: string;
}

type Way = "renderbus" | "bare" | "sandboxed";

interface JobProfile {
  jobId?: string;
  wallMs: number;
  /** createdAt -> dispatchedAt -> startedAt -> completedAt (the jobs service's clock). */
  timing: { createdToDispatchedMs: number | null; dispatchedToStartedMs: number | null; startedToCompletedMs: number | null };
  /** The worker's per-phase milliseconds (its "job completed" log line). */
  phasesMs: Record<string, number> | null;
}

/**
 * Benchmark 8 (issue "Nothing a peer does can crash a service", item 5): a job should take as long as ffmpeg itself.
 * The same transcode (the job type's defaults: H.264 CRF 23 `veryfast`, AAC 128k, mp4 +faststart) and thumbnail are
 * run, in rotating order within each round, (1) through Renderbus: POST /jobs with the input on the loopback file
 * server until the `job.completed` event arrives; (2) as the provider's exact ffmpeg command (same builder, the
 * worker's guard options, the same `-t` cap) on the same file, bare: the yardstick; (3) that command inside the
 * worker's sandbox wrapper (prlimit + bwrap + its environment), to report the sandbox's own cost apart.
 */
export async function benchJobOverhead(ctx: BenchContext): Promise<BenchmarkResult[]> {
  // Seven rounds: the machine is shared, and single transcodes of the same file vary by +-20% from one minute to the next.
  const rounds = ctx.sizes.quick ? 1 : 7;
  const sourceSeconds = ctx.sizes.quick ? QUICK_SOURCE_SECONDS : SOURCE_SECONDS;
  const mediaDir = await mkdtemp(join(tmpdir(), "rb-bench-overhead-"));
  const phasesSeen = new Map<string, Record<string, number>>();
  const stopWatching = ctx.env.watch("worker", (line) => {
    if (!line.includes("phasesMs")) return;
    try {
      const entry = JSON.parse(line) as { jobId?: string; phasesMs?: Record<string, number> };
      if (entry.jobId && entry.phasesMs) phasesSeen.set(entry.jobId, entry.phasesMs);
    } catch {
      // not a JSON line
    }
  });
  try {
    const source = join(mediaDir, "source.mp4");
    await run("ffmpeg", [
      "-v", "error", "-y",
      "-f", "lavfi", "-i", `testsrc=duration=${sourceSeconds}:size=1280x720:rate=30`,
      "-f", "lavfi", "-i", `sine=frequency=440:duration=${sourceSeconds}`,
      "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", source,
    ]);
    const sourceUrl = ctx.inputs.publish("overhead-source.mp4", source);
    const sandbox = await workerSandbox();
    const transcodeParams = parsed<TranscodeParams>("transcode", {});
    const thumbnailParams = parsed<ThumbnailParams>("thumbnail", { timestamp: 10 });
    const jobs: Measured[] = [
      {
        type: "transcode",
        params: {},
        // The reservation of a 30 s source covers 30 s: the worker caps the output there (-t 30.000).
        args: (input, output) => capOutputDuration(buildTranscodeArgs(transcodeParams, input, output), sourceSeconds * 1000),
        outputName: `output.${transcodeParams.format}`,
      },
      {
        type: "thumbnail",
        params: { timestamp: 10 },
        args: (input, output) => buildThumbnailArgs(thumbnailParams, input, output),
        outputName: `output.${thumbnailParams.format}`,
      },
    ];
    const ways: Way[] = ["renderbus", "bare", "sandboxed"];
    const samples = new Map<string, JobProfile[]>();
    // Not measured: the first job of a fresh system also pays for connections and the worker's first sandbox.
    await throughRenderbus(ctx, jobs[1]!, sourceUrl);
    for (let round = 0; round < rounds; round += 1) {
      for (const job of jobs) {
        // Rotating order: whatever else the shared machine does is spread over the three ways.
        const order = ways.map((_, i) => ways[(i + round) % ways.length]!);
        for (const way of order) {
          const profile = way === "renderbus" ? await throughRenderbus(ctx, job, sourceUrl) : { wallMs: await bareFfmpeg(job, source, way === "sandboxed" ? sandbox : null), timing: emptyTiming(), phasesMs: null };
          const key = `${job.type}/${way}`;
          samples.set(key, [...(samples.get(key) ?? []), profile]);
          ctx.log(`  ${job.type} ${way} round ${round + 1}/${rounds}: ${(profile.wallMs / 1000).toFixed(2)} s`);
        }
      }
    }
    await collectWorkerPhases(ctx, [...samples.values()].flat(), phasesSeen);
    return [overheadResult(jobs, samples, rounds, sandbox, sourceSeconds), profileResult(jobs, samples)];
  } finally {
    stopWatching();
    await rm(mediaDir, { recursive: true, force: true });
  }
}

function parsed<T>(type: "transcode" | "thumbnail", params: Record<string, unknown>): T {
  const result = parseJobParams(type, params);
  if (!result.ok) throw new Error(result.message);
  return result.params as T;
}

/** The sandbox the worker picks in development: bwrap when it works here (its self-test), else limits only. */
async function workerSandbox(): Promise<SandboxSettings> {
  const settings = sandboxSettings();
  if (settings.mode === "bwrap" && (await selfTestBwrap(settings.bwrapPath)) !== undefined) return { ...settings, mode: "none" };
  return settings;
}

const emptyTiming = (): JobProfile["timing"] => ({ createdToDispatchedMs: null, dispatchedToStartedMs: null, startedToCompletedMs: null });

/** The provider's command on a copy of the source in a fresh directory (as the worker's job dir), timed from spawn to exit. */
async function bareFfmpeg(job: Measured, source: string, sandbox: SandboxSettings | null): Promise<number> {
  const workDir = await mkdtemp(join(tmpdir(), "rb-bench-ffmpeg-"));
  try {
    const input = join(workDir, "input-source.mp4");
    await link(source, input);
    const caps = mediaCaps();
    const args = guardedFfmpegArgs(job.args(input, join(workDir, job.outputName)), caps);
    const command = sandbox
      ? sandboxCommand("ffmpeg", args, {
          workDir,
          limits: { cpuSeconds: cpuSecondsFor(TIMEOUT_MS), fileSizeBytes: caps.outputMaxBytes + FILE_SIZE_SLACK_BYTES },
          settings: sandbox,
          extraEnv: { SVT_LOG: "1" },
        })
      : { command: "ffmpeg", args, env: process.env as Record<string, string> };
    const startedAt = performance.now();
    await new Promise<void>((resolve, reject) => {
      const child = spawn(command.command, command.args, { cwd: workDir, stdio: ["ignore", "ignore", "pipe"], env: command.env });
      let stderr = "";
      child.stderr.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
      child.once("error", reject);
      child.once("close", (code) => (code === 0 ? resolve() : reject(new Error(`ffmpeg exited ${code}: ${stderr}`))));
    });
    return performance.now() - startedAt;
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

/** POST /jobs -> the `job.completed` event, then the job's timing and the worker's phases. */
async function throughRenderbus(ctx: BenchContext, job: Measured, sourceUrl: string): Promise<JobProfile> {
  let jobId: string | undefined;
  const ended = new Map<string, { at: number; subject: string }>();
  let wake: (() => void) | undefined;
  const stop = ctx.bus.listen<{ jobId: string }>("jobs.events.job.*", (event, subject) => {
    if (subject.endsWith(".completed") || subject.endsWith(".failed") || subject.endsWith(".cancelled")) {
      ended.set(event.jobId, { at: performance.now(), subject });
      wake?.();
    }
  });
  try {
    const sentAt = performance.now();
    const response = await fetch(`${ctx.gatewayUrl}/jobs`, {
      method: "POST",
      headers: { authorization: `Bearer ${ctx.orgs.main.key}`, "content-type": "application/json" },
      body: JSON.stringify({ type: job.type, params: job.params, inputs: { source: sourceUrl } }),
    });
    if (response.status !== 201) throw new Error(`POST /jobs answered ${response.status}: ${await response.text()}`);
    jobId = ((await response.json()) as { data: { id: string } }).data.id;
    const deadline = Date.now() + TIMEOUT_MS;
    while (!ended.has(jobId)) {
      if (Date.now() > deadline) throw new Error(`job ${jobId} did not end within ${TIMEOUT_MS / 1000} s`);
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 1000);
      });
    }
    const end = ended.get(jobId)!;
    if (!end.subject.endsWith(".completed")) throw new Error(`job ${jobId} ended ${end.subject}: ${ctx.env.tail("worker").slice(-5).join("\n")}`);
    return { jobId, wallMs: end.at - sentAt, timing: await jobTiming(ctx, jobId), phasesMs: null };
  } finally {
    stop();
  }
}

async function jobTiming(ctx: BenchContext, jobId: string): Promise<JobProfile["timing"]> {
  const response = await fetch(`${ctx.gatewayUrl}/jobs/${jobId}`, { headers: { authorization: `Bearer ${ctx.orgs.main.key}` } });
  if (!response.ok) return emptyTiming();
  const { timing } = ((await response.json()) as { data: { timing?: Record<string, string | number | null> } }).data;
  // Epoch milliseconds (as a number or a numeric string) or an ISO date.
  const at = (name: string) => {
    const value = timing?.[name];
    if (value === null || value === undefined) return null;
    const ms = typeof value === "number" || /^\d+$/.test(value) ? Number(value) : Date.parse(value);
    return Number.isFinite(ms) ? ms : null;
  };
  const span = (from: string, to: string) => {
    const [a, b] = [at(from), at(to)];
    return a === null || b === null ? null : b - a;
  };
  return { createdToDispatchedMs: span("createdAt", "dispatchedAt"), dispatchedToStartedMs: span("dispatchedAt", "startedAt"), startedToCompletedMs: span("startedAt", "completedAt") };
}

/**
 * Fills in each measured job's phases from the worker's "job completed" log lines. The services log through a
 * buffered destination (4 KiB before a write), so the last lines are still in the worker's buffer when the rounds
 * end: cheap qr.generate jobs, run after the measurements, push them out.
 */
async function collectWorkerPhases(ctx: BenchContext, profiles: JobProfile[], seen: Map<string, Record<string, number>>): Promise<void> {
  const missing = () => profiles.filter((profile) => profile.jobId && !seen.has(profile.jobId));
  for (let filler = 0; filler < 60 && missing().length > 0; filler += 1) {
    await fetch(`${ctx.gatewayUrl}/jobs`, {
      method: "POST",
      headers: { authorization: `Bearer ${ctx.orgs.main.key}`, "content-type": "application/json" },
      body: JSON.stringify({ type: "qr.generate", params: { content: `flush ${filler}` } }),
    });
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
  for (const profile of profiles) profile.phasesMs = (profile.jobId && seen.get(profile.jobId)) || null;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const seconds = (ms: number) => round2(ms / 1000);

function overheadResult(jobs: Measured[], samples: Map<string, JobProfile[]>, rounds: number, sandbox: SandboxSettings, sourceSeconds: number): BenchmarkResult {
  const rows: Array<Array<string | number>> = [];
  const data: Record<string, unknown> = {};
  const targets: TargetCheck[] = [];
  for (const job of jobs) {
    const wall = (way: Way) => (samples.get(`${job.type}/${way}`) ?? []).map((sample) => sample.wallMs);
    const bare = wall("bare");
    // Ratios of the same round: each way is compared with the bare run measured next to it.
    const ratios = (way: Way) => wall(way).map((ms, i) => ms / bare[i]!);
    for (const way of ["bare", "sandboxed", "renderbus"] as const) {
      const walls = wall(way);
      const perRound = ratios(way);
      rows.push([
        `${job.type}: ${way === "bare" ? "bare ffmpeg (yardstick)" : way === "sandboxed" ? `ffmpeg in the worker's sandbox (${sandbox.mode}${sandbox.prlimitPath ? " + prlimit" : ""})` : "Renderbus job (POST /jobs -> job.completed)"}`,
        walls.length,
        seconds(median(walls)),
        `${seconds(Math.min(...walls))} - ${seconds(Math.max(...walls))}`,
        way === "bare" ? "1" : `${round2(median(perRound))}x`,
        way === "bare" ? "-" : `${round2(Math.min(...perRound))} - ${round2(Math.max(...perRound))}`,
      ]);
      data[`${job.type}/${way}`] = { wallMs: walls.map((ms) => Math.round(ms)), ratioToBare: perRound.map(round2) };
    }
    if (job.type === "transcode") {
      const actual = round2(median(ratios("renderbus")));
      const met = actual <= OVERHEAD_TARGET;
      targets.push({ name: "transcode job wall time / bare ffmpeg (median of rounds)", target: `<= ${OVERHEAD_TARGET}x`, actual: `${actual}x`, met, ...(met ? {} : { missedBy: `${round2(actual - OVERHEAD_TARGET)}x over` }) });
    }
  }
  return {
    id: "job-overhead",
    title: "8. Job wall time vs bare ffmpeg on the same input",
    baseline: `the provider's own ffmpeg command run bare on the same file, in the same round (${rounds} rounds, the three ways in rotating order)`,
    columns: ["job, run as", "rounds", "median s", "min - max s", "ratio to bare (median of rounds)", "ratio min - max"],
    rows,
    targets,
    notes: [
      `Source: ${sourceSeconds} s of 1280x720 30 fps H.264 + AAC (lavfi testsrc + sine), served by the bench's loopback file server. Transcode with the job type's defaults (libx264 veryfast CRF 23, AAC 128k, mp4 +faststart, -t ${sourceSeconds}.000 as the reservation caps it); thumbnail at 10 s as jpg.`,
      "The bare and sandboxed commands are built by the provider's own argument builders with the worker's guard options (format/protocol whitelists, -max_pixels, -fs), on a copy of the source in a fresh directory; their time is spawn to exit.",
      "The Renderbus figure is the client's: POST /jobs sent until the job.completed event arrives on NATS. It includes the minimum reservation, the download, ffprobe, the credit reservation, StartJob, the provider, measuring the output, storing the output and the completion report (section 9 splits it).",
      "A thumbnail's ffmpeg run takes a fraction of a second, so its ratio is the fixed cost of a job, not a proportional overhead; the target is judged on the transcode.",
    ],
    data,
  };
}

function profileResult(jobs: Measured[], samples: Map<string, JobProfile[]>): BenchmarkResult {
  const rows: Array<Array<string | number>> = [];
  const data: Record<string, unknown> = {};
  for (const job of jobs) {
    const profiles = samples.get(`${job.type}/renderbus`) ?? [];
    const bare = median((samples.get(`${job.type}/bare`) ?? []).map((sample) => sample.wallMs));
    const medianOf = (values: Array<number | null | undefined>) => {
      const known = values.filter((value): value is number => typeof value === "number");
      return known.length ? Math.round(median(known)) : null;
    };
    const phaseNames = [...new Set(profiles.flatMap((profile) => Object.keys(profile.phasesMs ?? {})))];
    const lines: Array<[string, number | null]> = [
      ["client: POST /jobs -> job.completed event", medianOf(profiles.map((p) => p.wallMs))],
      ["jobs service: createdAt -> dispatchedAt", medianOf(profiles.map((p) => p.timing.createdToDispatchedMs))],
      ["jobs service: dispatchedAt -> startedAt", medianOf(profiles.map((p) => p.timing.dispatchedToStartedMs))],
      ["jobs service: startedAt -> completedAt", medianOf(profiles.map((p) => p.timing.startedToCompletedMs))],
      ...phaseNames.map((name): [string, number | null] => [`worker: ${name}`, medianOf(profiles.map((p) => p.phasesMs?.[name]))]),
      ["bare ffmpeg (same rounds)", Math.round(bare)],
    ];
    for (const [what, ms] of lines) rows.push([job.type, what, ms ?? "-"]);
    data[job.type] = profiles;
  }
  return {
    id: "job-overhead-profile",
    title: "9. Where a job's time goes (median per phase, same runs as section 8)",
    baseline: "the bare ffmpeg run of section 8",
    columns: ["job", "phase", "median ms"],
    rows,
    targets: [],
    notes: [
      "Worker phases come from the phasesMs of the worker's \"job completed\" log line (services/worker/src/run-job/process-dispatch.ts): reserveMinimum (billing RPC), downloadAndProbe (HTTP download + the probe: an MP4/MOV movie header or a PNG/JPEG header read in-process, sandboxed ffprobe for other inputs), countPackets (only for sources without a duration), reserveAndStart (billing RPC + StartJob), provider (the sandboxed ffmpeg run), measureOutput (the output's header read in-process; sandboxed ffprobe only for formats that reader does not cover), storeOutput (into the output store), reportCompletion (CompleteJob).",
      "The jobs service's timestamps have whole milliseconds and come from its clock; the client's figure also holds the HTTP submission and the NATS event's way back.",
    ],
    data,
  };
}
