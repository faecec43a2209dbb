import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { SERVICE_MAX_SEMI_SPACE_MB, SERVICE_NODE_FLAGS, SERVICE_V8_POOL_SIZE } from "./system.js";

/**
 * A service-like heap: tens of thousands of live objects while short-lived ones churn. Prints the largest the young
 * generation grew (new_space's size: both semi-spaces, and on Node 24 a few pages more).
 */
const churn = `
  const v8 = require("node:v8");
  const ring = new Array(60000);
  let largest = 0;
  for (let i = 0; i < 600000; i++) {
    ring[i % ring.length] = { i, text: "x".repeat(20) + i, pair: [i, i + 1] };
    if (i % 5000 === 0) largest = Math.max(largest, v8.getHeapSpaceStatistics().find((s) => s.space_name === "new_space").space_size);
  }
  console.log(largest);
`;

describe("the node flags services run with", () => {
  // Runs under Node 20 in `vitest run` and under Node 24 (the image's runtime) in `npm run test:unit:node24`; on Node
  // 24 without --max-semi-space-size the young generation grows to 128 MB here, and the dispatcher spent a quarter of
  // its CPU in the garbage collector.
  it("keep the young generation within SERVICE_MAX_SEMI_SPACE_MB per semi-space on this node", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [...SERVICE_NODE_FLAGS, "-e", churn]);
    const largestMb = Number(stdout.trim()) / (1024 * 1024);
    expect(largestMb).toBeGreaterThan(0);
    // new_space counts both semi-spaces, and Node 24's a few pages more: 22 MB seen with 8 MB semi-spaces, 33.25 MB
    // under the full suite's load. Without the flag it is 128 MB: 6x still tells the two apart.
    expect(largestMb).toBeLessThanOrEqual(6 * SERVICE_MAX_SEMI_SPACE_MB);
  });

  /** The threads a node process runs with `flags` (after start-up: V8's workers exist from the start). */
  const threadsWith = async (flags: readonly string[]) => {
    const { stdout } = await promisify(execFile)(process.execPath, [...flags, "-e", `console.log(require("node:fs").readFileSync("/proc/self/status", "utf8").match(/Threads:\\s+(\\d+)/)[1])`]);
    return Number(stdout.trim());
  };

  it.skipIf(process.platform !== "linux")("run V8's background work (GC, compilation) on SERVICE_V8_POOL_SIZE thread(s), not node's default four", async () => {
    const [withFlags, withoutPoolSize] = await Promise.all([threadsWith(SERVICE_NODE_FLAGS), threadsWith(SERVICE_NODE_FLAGS.filter((flag) => !flag.startsWith("--v8-pool-size")))]);
    expect(SERVICE_V8_POOL_SIZE).toBe(1);
    expect(withoutPoolSize - withFlags).toBe(4 - SERVICE_V8_POOL_SIZE);
  });
});
