import { describe, expect, it } from "vitest";
import { progressBar } from "./progress.js";

describe("the CLI's progress bar", () => {
  it("draws percent and ETA of a running job's progress", () => {
    expect(progressBar({ percent: 50, etaMs: 12_000, updatedAt: 1 }, 10)).toBe("[█████░░░░░] 50.0%  ETA 12.0s");
    expect(progressBar({ percent: 3.3, etaMs: null, updatedAt: 1 }, 10)).toBe("[░░░░░░░░░░] 3.3%");
    expect(progressBar({ percent: 100, etaMs: 0, updatedAt: 1 }, 4)).toBe("[████] 100.0%");
  });

  it("draws nothing when the percent is unknown or there is no progress", () => {
    expect(progressBar({ percent: null, etaMs: null, updatedAt: 1 })).toBe("");
    expect(progressBar(null)).toBe("");
  });
});
