import { spawn } from "node:child_process";
import { stat } from "node:fs/promises";
import { JobCancelledError, JobFailure, providerError } from "../job-failure.js";
import { inputOptions, isPlainMediaPath } from "../media/input-options.js";
import { mediaCaps, outputSizeCapError, pixelCapError, pixelCapExceeded, type MediaCaps } from "../media/media-caps.js";
import { cpuSecondsFor, sandboxCommand, sandboxSettings, type SandboxSettings } from "../sandbox/sandbox.js";
import { createProgressParser, type FfmpegProgressTick } from "./ffmpeg-progress.js";

/** After SIGTERM, how long ffmpeg gets before SIGKILL: cancellation must stop the process within 2 s. */
export const KILL_GRACE_MS = 1500;

const STDERR_LINES_KEPT = 20;
// Lines that say that something failed without saying what.
const UNINFORMATIVE = /^(conversion failed!?|exiting normally.*|error while filtering|svt\[info\].*|\s*)$/i;

/**
 * The line of ffmpeg's error output worth showing a customer: the last informative one, with the job's temp
 * directory removed so no internal path leaks, and capped in length.
 */
export function summarizeFfmpegError(stderrLines: string[], workDir: string): string {
  const informative = stderrLines.map((line) => line.trim()).filter((line) => !UNINFORMATIVE.test(line));
  const line = informative.at(-1) ?? "ffmpeg failed";
  const cleaned = line.split(`${workDir}/`).join("").split(workDir).join("").replace(/^\[[^\]]+ @ 0x[0-9a-f]+\]\s*/, "");
  return cleaned.length > 300 ? `${cleaned.slice(0, 297)}...` : cleaned;
}

export interface RunFfmpegOptions {
  args: string[];
  /** Working directory; also stripped from error messages. */
  workDir: string;
  /** The plan's maximum run time. */
  timeoutMs: number;
  /** Aborted when the job is cancelled. */
  signal: AbortSignal;
  /** Called with the process id once spawned (tests check the process is gone after a cancel). */
  onSpawn?: (pid: number) => void;
  command?: string;
  /** Defaults to the worker's process-wide sandbox settings. */
  sandbox?: SandboxSettings;
  /** Defaults to the worker's process-wide media caps. */
  caps?: MediaCaps;
  /** Called with each block of ffmpeg's `-progress` stream (about every 0.5 s); without it ffmpeg reports none. */
  onProgress?: (tick: FfmpegProgressTick) => void;
}

// Room above OUTPUT_MAX_BYTES for what `-fs` lets through (it stops after the packet that crosses it) before the
// file size rlimit kills the process.
const FILE_SIZE_SLACK_BYTES = 64 * 1024 * 1024;

/**
 * The arguments ffmpeg runs with (pure): the demuxer/protocol whitelists and the pixel cap before every input, the
 * output size cap before the output (always the last argument).
 * @throws JobFailure PROVIDER_ERROR for an input path with pattern characters (image2 would expand it).
 */
export function guardedFfmpegArgs(args: string[], caps: MediaCaps): string[] {
  const guarded = ["-hide_banner", "-nostdin", "-loglevel", "error", "-y"];
  for (const [index, arg] of args.entries()) {
    if (index === args.length - 1) guarded.push("-fs", String(caps.outputMaxBytes));
    if (arg === "-i") {
      const input = args[index + 1] ?? "";
      if (!isPlainMediaPath(input)) throw providerError("an input path is not one the worker made");
      guarded.push(...inputOptions(caps));
    }
    guarded.push(arg);
  }
  return guarded;
}

/**
 * Runs ffmpeg to completion. Only errors are logged by ffmpeg (`-loglevel error`), and only the last lines are
 * kept, so a long job cannot fill memory with progress output.
 * @throws JobFailure PROVIDER_ERROR (non-zero exit, with the last meaningful stderr line) or PROVIDER_TIMEOUT;
 *   JobCancelledError when `signal` fires (the process is sent SIGTERM, then SIGKILL after KILL_GRACE_MS).
 */
export function runFfmpeg({ args, workDir, timeoutMs, signal, onSpawn, onProgress, command = "ffmpeg", sandbox = sandboxSettings(), caps = mediaCaps() }: RunFfmpegOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new JobCancelledError());
    let wrapped;
    try {
      // `-progress pipe:1`: key=value blocks on stdout every 0.5 s (a global option, so it goes first).
      const guarded = guardedFfmpegArgs(args, caps);
      wrapped = sandboxCommand(command, onProgress ? ["-progress", "pipe:1", ...guarded] : guarded, {
        workDir,
        limits: { cpuSeconds: cpuSecondsFor(timeoutMs), fileSizeBytes: caps.outputMaxBytes + FILE_SIZE_SLACK_BYTES },
        settings: sandbox,
        // SVT-AV1 logs to stderr on its own; 1 = errors only.
        extraEnv: { SVT_LOG: "1" },
      });
    } catch (error) {
      return reject(error as Error);
    }
    const output = args.at(-1);
    const child = spawn(wrapped.command, wrapped.args, { cwd: workDir, stdio: ["ignore", onProgress ? "pipe" : "ignore", "pipe"], env: wrapped.env });
    if (onProgress && child.stdout) {
      const parser = createProgressParser((tick) => {
        try {
          onProgress(tick);
        } catch {
          // Progress is informational: a failing listener never stops the job.
        }
      });
      child.stdout.setEncoding("utf8");
      child.stdout.on("data", (chunk: string) => parser.push(chunk));
    }
    const lines: string[] = [];
    let partial = "";
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      const parts = (partial + chunk).split(/\r?\n|\r/);
      partial = parts.pop() ?? "";
      lines.push(...parts);
      if (lines.length > STDERR_LINES_KEPT) lines.splice(0, lines.length - STDERR_LINES_KEPT);
    });

    let stopReason: "timeout" | "cancelled" | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    const stop = (reason: "timeout" | "cancelled") => {
      if (stopReason || child.exitCode !== null) return;
      stopReason = reason;
      child.kill("SIGTERM");
      killTimer = setTimeout(() => child.kill("SIGKILL"), KILL_GRACE_MS);
    };
    const onAbort = () => stop("cancelled");
    signal.addEventListener("abort", onAbort, { once: true });
    const runTimer = setTimeout(() => stop("timeout"), timeoutMs);

    child.once("spawn", () => {
      if (child.pid !== undefined) onSpawn?.(child.pid);
    });
    child.once("error", (error) => {
      clearTimeout(runTimer);
      signal.removeEventListener("abort", onAbort);
      reject(providerError(`could not start ffmpeg (${(error as NodeJS.ErrnoException).code ?? error.message})`));
    });
    child.once("close", (code) => {
      clearTimeout(runTimer);
      clearTimeout(killTimer);
      signal.removeEventListener("abort", onAbort);
      if (stopReason === "cancelled") return reject(new JobCancelledError());
      if (stopReason === "timeout") {
        return reject(new JobFailure("PROVIDER_TIMEOUT", `the job exceeded the plan's maximum run time of ${Math.round(timeoutMs / 1000)} s`));
      }
      if (partial) lines.push(partial);
      const oversized = pixelCapExceeded(lines.join("\n"), caps);
      if (oversized) return reject(pixelCapError(oversized.width, oversized.height, caps));
      if (code !== 0) return reject(providerError(summarizeFfmpegError(lines, workDir)));
      // `-fs` ends the output cleanly at the cap, with exit code 0: a file that long is a truncated one.
      if (output === undefined || output === "-") return resolve();
      stat(output).then(
        (file) => (file.size >= caps.outputMaxBytes ? reject(outputSizeCapError(caps)) : resolve()),
        () => resolve(),
      );
    });
  });
}
