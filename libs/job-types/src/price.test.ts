import { describe, expect, it } from "vitest";
import { MINIMUM_PRICE, priceOf } from "./price.js";

describe("priceOf", () => {
  it("charges 2 credits per started 10 s of 1080p video, with a human breakdown", () => {
    expect(priceOf({ output: "video", durationMs: 127_000, height: 1080 })).toEqual({ credits: 26, breakdown: "2m7s video @1080p" });
  });

  it("charges 1 credit per started 10 s up to 720p and 4 above 1080p", () => {
    expect(priceOf({ output: "video", durationMs: 10_000, height: 720 }).credits).toBe(1);
    expect(priceOf({ output: "video", durationMs: 10_050, height: 360 }).credits).toBe(2);
    expect(priceOf({ output: "video", durationMs: 20_000, height: 2160 }).credits).toBe(8);
  });

  it("counts audio as 1 credit per started 10 s", () => {
    expect(priceOf({ output: "audio", durationMs: 12_000 })).toEqual({ credits: 2, breakdown: "0m12s audio" });
  });

  // A container's duration carries sub-frame noise: the price counts it rounded to the nearest 100 ms, and the
  // breakdown shows that same rounded duration.
  it.each([
    [9_950, 1, "0m10s video @720p"],
    [10_000, 1, "0m10s video @720p"],
    [10_040, 1, "0m10s video @720p"],
    [10_050, 2, "0m10.1s video @720p"],
    [30_001, 3, "0m30s video @720p"],
    [59_990, 6, "1m0s video @720p"],
    [60_049, 6, "1m0s video @720p"],
    [61_240, 7, "1m1.2s video @720p"],
  ])("charges %d ms of 720p video %d credits as %s", (durationMs, credits, breakdown) => {
    expect(priceOf({ output: "video", durationMs, height: 720 })).toEqual({ credits, breakdown });
  });

  it("keeps credits and breakdown in agreement: the credits are the started 10 s units of the duration shown", () => {
    for (let durationMs = 0; durationMs <= 125_000; durationMs += 7) {
      const { credits, breakdown } = priceOf({ output: "audio", durationMs });
      const [, minutes, seconds] = /^(\d+)m([\d.]+)s audio$/.exec(breakdown)!;
      const shownMs = Math.round((Number(minutes) * 60 + Number(seconds)) * 1000);
      expect(credits, `${durationMs} ms shown as ${breakdown}`).toBe(Math.max(1, Math.ceil(shownMs / 10_000)));
    }
  });

  it("charges the minimum for images, metadata and empty outputs", () => {
    expect(priceOf({ output: "image" })).toEqual({ credits: MINIMUM_PRICE, breakdown: "image" });
    expect(priceOf({ output: "data" })).toEqual({ credits: MINIMUM_PRICE, breakdown: "metadata" });
    expect(priceOf({ output: "video", durationMs: 0, height: 1080 }).credits).toBe(MINIMUM_PRICE);
  });
});
