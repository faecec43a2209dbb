import { describe, expect, it, vi } from "vitest";
import { createLogger } from "@renderbus/telemetry";
import { startOutputPruning } from "./prune-outputs.js";

const logger = createLogger({ service: "test", level: "silent" });

describe("output pruning", () => {
  it("deletes outputs older than the retention at once and every interval, until stopped, surviving a failed round", async () => {
    vi.useFakeTimers({ now: 1_000_000_000 });
    try {
      const cutoffs: number[] = [];
      let fail = true;
      const outputs = {
        deleteStoredBefore: async (cutoff: number) => {
          cutoffs.push(cutoff);
          if (fail) throw new Error("store unreachable");
          return 2;
        },
      };
      const stop = startOutputPruning({ outputs, retentionMs: 7_000, logger, intervalMs: 1_000 });
      expect(cutoffs).toEqual([1_000_000_000 - 7_000]);
      fail = false;
      await vi.advanceTimersByTimeAsync(2_000);
      expect(cutoffs).toEqual([999_993_000, 999_994_000, 999_995_000]);
      stop();
      await vi.advanceTimersByTimeAsync(5_000);
      expect(cutoffs).toHaveLength(3);
    } finally {
      vi.useRealTimers();
    }
  });
});
