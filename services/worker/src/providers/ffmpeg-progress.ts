/**
 * ffmpeg's `-progress` stream: blocks of `key=value` lines, each ended by `progress=continue` (every `-stats_period`,
 * 0.5 s by default) or `progress=end` (once, when ffmpeg finishes). docs/concepts.md, "Progress".
 */

/** One block of ffmpeg's progress stream, reduced to what the job's progress needs. */
export interface FfmpegProgressTick {
  /** How much output ffmpeg has written so far (the end of its furthest stream), in ms; null before it knows. */
  outTimeMs: number | null;
  /** Encoding speed relative to real time (`2.5` for `speed=2.5x`); null when ffmpeg reports none. */
  speed: number | null;
  /** True for the last block (`progress=end`). */
  ended: boolean;
}

// A block is a dozen short lines; a line longer than this is not ffmpeg's, and is dropped rather than buffered.
const MAX_LINE_CHARS = 1024;

/**
 * Splits ffmpeg's progress stream into ticks: feed it the chunks of ffmpeg's stdout as they arrive, get one call per
 * finished block. Unknown keys, malformed lines and `N/A` values are ignored; memory stays bounded whatever is fed.
 */
export function createProgressParser(onTick: (tick: FfmpegProgressTick) => void): { push(chunk: string): void } {
  let partial = "";
  let outTimeUs: number | null = null;
  let speed: number | null = null;
  const line = (text: string) => {
    const separator = text.indexOf("=");
    if (separator <= 0) return;
    const key = text.slice(0, separator).trim();
    const value = text.slice(separator + 1).trim();
    if (key === "out_time_us") {
      const parsed = Number(value);
      outTimeUs = value !== "" && Number.isFinite(parsed) && parsed >= 0 ? parsed : null;
    } else if (key === "speed") {
      const parsed = Number(value.replace(/x$/, ""));
      speed = value !== "N/A" && Number.isFinite(parsed) && parsed > 0 ? parsed : null;
    } else if (key === "progress") {
      onTick({ outTimeMs: outTimeUs === null ? null : Math.floor(outTimeUs / 1000), speed, ended: value === "end" });
      outTimeUs = null;
      speed = null;
    }
  };
  return {
    push(chunk: string) {
      const parts = (partial + chunk).split(/\r?\n/);
      partial = parts.pop() ?? "";
      if (partial.length > MAX_LINE_CHARS) partial = "";
      for (const part of parts) if (part.length <= MAX_LINE_CHARS) line(part);
    },
  };
}

/** A job's progress as the API shows it (docs/concepts.md, "Progress"). */
export interface JobProgress {
  /** 0-100, one decimal; null when the expected output length is unknown. */
  percent: number | null;
  /** Estimated milliseconds to the end of ffmpeg's run; null when unknown. */
  etaMs: number | null;
  /** Epoch ms of the tick. */
  updatedAt: number;
}

/**
 * The job's progress from one tick (pure): output written over the output expected (the source's length, capped at
 * what the reservation covers), and the time left at ffmpeg's current speed.
 */
export function jobProgressOf(tick: FfmpegProgressTick, expectedOutputMs: number | null, now: number): JobProgress {
  if (tick.ended) return { percent: expectedOutputMs ? 100 : null, etaMs: expectedOutputMs ? 0 : null, updatedAt: now };
  if (!expectedOutputMs || expectedOutputMs <= 0 || tick.outTimeMs === null) return { percent: null, etaMs: null, updatedAt: now };
  const done = Math.min(tick.outTimeMs, expectedOutputMs);
  const percent = Math.floor((done / expectedOutputMs) * 1000) / 10;
  const etaMs = tick.speed ? Math.round((expectedOutputMs - done) / tick.speed) : null;
  return { percent, etaMs, updatedAt: now };
}
