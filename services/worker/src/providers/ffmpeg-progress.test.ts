import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { progressReporter } from "../run-job/progress-reporter.js";
import { createProgressParser, jobProgressOf, type FfmpegProgressTick } from "./ffmpeg-progress.js";

// Captured from ffmpeg 5.1 (`ffmpeg -progress pipe:1 -nostats -i 10s.mp4 -c:v libx264 -preset veryfast -c:a aac -t 4 out.mp4`).
const FIXTURE = path.join(import.meta.dirname, "testdata", "ffmpeg-5.1-progress.txt");

async function ticksOf(chunkSize: number): Promise<FfmpegProgressTick[]> {
  const text = await readFile(FIXTURE, "utf8");
  const ticks: FfmpegProgressTick[] = [];
  const parser = createProgressParser((tick) => ticks.push(tick));
  for (let offset = 0; offset < text.length; offset += chunkSize) parser.push(text.slice(offset, offset + chunkSize));
  return ticks;
}

describe("ffmpeg -progress parser", () => {
  it("reads every block of real ffmpeg output, whatever the chunking", async () => {
    const ticks = await ticksOf(1 << 20);
    expect(ticks).toEqual([
      { outTimeMs: 23, speed: 1.43, ended: false },
      { outTimeMs: 928, speed: 1.75, ended: false },
      { outTimeMs: 2716, speed: 2.64, ended: false },
      { outTimeMs: 3831, speed: 2.48, ended: false },
      { outTimeMs: 4017, speed: 2.25, ended: true },
    ]);
    for (const size of [1, 7, 64]) expect(await ticksOf(size)).toEqual(ticks);
  });

  it("ignores N/A, negative and junk values and keeps memory bounded", () => {
    const ticks: FfmpegProgressTick[] = [];
    const parser = createProgressParser((tick) => ticks.push(tick));
    parser.push("out_time_us=N/A\nspeed=N/A\nprogress=continue\n");
    parser.push("out_time_us=-9223372036854775807\nspeed=0x\n=x\nnonsense\nprogress=continue\n");
    parser.push("x".repeat(100_000));
    parser.push("\nout_time_us=1500000\nspeed=2x\r\nprogress=end\r\n");
    expect(ticks).toEqual([
      { outTimeMs: null, speed: null, ended: false },
      { outTimeMs: null, speed: null, ended: false },
      { outTimeMs: 1500, speed: 2, ended: true },
    ]);
  });

  it("turns a tick into percent of the expected output and an ETA at ffmpeg's speed", () => {
    expect(jobProgressOf({ outTimeMs: 2716, speed: 2, ended: false }, 4000, 1)).toEqual({ percent: 67.9, etaMs: 642, updatedAt: 1 });
    expect(jobProgressOf({ outTimeMs: 5000, speed: 2, ended: false }, 4000, 1)).toEqual({ percent: 100, etaMs: 0, updatedAt: 1 });
    expect(jobProgressOf({ outTimeMs: 100, speed: null, ended: false }, 4000, 1)).toEqual({ percent: 2.5, etaMs: null, updatedAt: 1 });
    expect(jobProgressOf({ outTimeMs: 100, speed: 1, ended: false }, null, 1)).toEqual({ percent: null, etaMs: null, updatedAt: 1 });
    expect(jobProgressOf({ outTimeMs: null, speed: 1, ended: false }, 4000, 1)).toEqual({ percent: null, etaMs: null, updatedAt: 1 });
    expect(jobProgressOf({ outTimeMs: 3900, speed: 1, ended: true }, 4000, 1)).toEqual({ percent: 100, etaMs: 0, updatedAt: 1 });
  });

  it("publishes at most one message every 500 ms per job, and not ffmpeg's last tick", () => {
    let clock = 0;
    const sent: Array<{ percent: number | null; updatedAt: number }> = [];
    const report = progressReporter({ orgId: "org_1", jobId: "job_1", expectedOutputMs: 10_000, publish: (message) => sent.push(message), now: () => clock });
    for (const [at, outTimeMs] of [[0, 100], [200, 500], [499, 900], [500, 1000], [900, 2000], [1100, 3000]] as const) {
      clock = at;
      report({ outTimeMs, speed: 1, ended: false });
    }
    clock = 5000;
    report({ outTimeMs: 10_000, speed: 1, ended: true });
    expect(sent.map(({ percent, updatedAt }) => [updatedAt, percent])).toEqual([[0, 1], [500, 10], [1100, 30]]);
  });
});
