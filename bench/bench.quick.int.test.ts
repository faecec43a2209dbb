import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { testInfra } from "@renderbus/testing";

const run = promisify(execFile);
const repoRoot = resolve(import.meta.dirname, "..");

/** The benchmark ids `npm run bench` must report (issue 10); timings are never asserted here. */
const BENCHMARK_IDS = ["authenticated-reads", "job-acceptance", "queued-to-running", "webhook-throughput", "webhook-latency", "webhook-endpoints", "webhook-peers", "memory", "batch-end-to-end", "job-overhead", "job-overhead-profile", "capped-replicas", "upload-throughput", "progress-overhead"];

describe("npm run bench -- --quick", () => {
  it("runs every benchmark and writes BENCHMARKS.md and benchmarks.json", async () => {
    const infra = testInfra();
    const out = await mkdtemp(join(tmpdir(), "rb-bench-test-"));
    try {
      await run(join(repoRoot, "node_modules", ".bin", "tsx"), ["bench/run.ts", "--quick", "--out", out], {
        cwd: repoRoot,
        env: { ...process.env, DATABASE_URL: infra.databaseUrl, NATS_URL: infra.natsUrl, REDIS_URL: infra.redisUrl },
        timeout: 780_000,
        maxBuffer: 16 * 1024 * 1024,
      });
      const report = JSON.parse(await readFile(join(out, "benchmarks.json"), "utf8")) as { quick: boolean; benchmarks: Array<{ id: string; rows: unknown[] }>; failures: unknown[] };
      expect(report.quick).toBe(true);
      expect(report.failures).toEqual([]);
      expect(report.benchmarks.map((b) => b.id).sort()).toEqual([...BENCHMARK_IDS].sort());
      for (const benchmark of report.benchmarks) expect(benchmark.rows.length).toBeGreaterThan(0);
      const markdown = await readFile(join(out, "BENCHMARKS.md"), "utf8");
      expect(markdown).toContain("## Machine");
      expect(markdown).toContain("## Targets");
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }, 840_000);
});
