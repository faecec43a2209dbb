import type { JobProgressTiming } from "@renderbus/bus";
import { jobProgressOf, type FfmpegProgressTick, type JobProgress } from "../providers/ffmpeg-progress.js";

/** Publishes a job's progress (the worker: a core NATS message on `jobs.progress.<orgId>.<jobId>`). */
export type PublishProgress = (message: { orgId: string; jobId: string } & JobProgress & { timing?: JobProgressTiming }) => void;

/** The least time between two progress messages of one job (docs/concepts.md, "Progress"). */
export const PROGRESS_INTERVAL_MS = 500;

/**
 * Turns ffmpeg's ticks into the job's progress messages, at most one every {@link PROGRESS_INTERVAL_MS}: ticks that
 * come sooner are dropped (the next one carries newer figures). ffmpeg's last tick is not sent: completion follows
 * at once and the job then shows 100%.
 */
export function progressReporter(options: {
  orgId: string;
  jobId: string;
  /** The output length the job is expected to produce; null when unknown (percent and ETA are then null). */
  expectedOutputMs: number | null;
  /** When the job was created and started (from StartJob), carried on every message for the `job.progress` webhook. */
  timing?: JobProgressTiming;
  publish: PublishProgress;
  intervalMs?: number;
  now?: () => number;
}): (tick: FfmpegProgressTick) => void {
  const { orgId, jobId, expectedOutputMs, timing, publish, intervalMs = PROGRESS_INTERVAL_MS, now = Date.now } = options;
  let lastSentAt = -Infinity;
  return (tick) => {
    if (tick.ended) return;
    const at = now();
    if (at - lastSentAt < intervalMs) return;
    lastSentAt = at;
    publish({ orgId, jobId, ...jobProgressOf(tick, expectedOutputMs, at), ...(timing ? { timing } : {}) });
  };
}
