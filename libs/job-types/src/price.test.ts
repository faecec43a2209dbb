import { describe, expect, it } from "vitest";
import { MINIMUM_PRICE, priceOf } from "./price.js";

describe("priceOf", () => {
  it("charges 2 credits per started 10 s of 1080p video, with a human breakdown", () => {
    expect(priceOf({ output: "video", durationMs: 127_000, height: 1080 })).toEqual({ credits: 26, breakdown: "2m7s video @1080p" });
  });

  it("charges 1 credit per started 10 s up to 720p and 4 above 1080p", () => {
    expect(priceOf({ output: "video", durationMs: 10_000, height: 720 }).credits).toBe(1);
    expect(priceOf({ output: "video", durationMs: 10_001, height: 360 }).credits).toBe(2);
    expect(priceOf({ output: "video", durationMs: 20_000, height: 2160 }).credits).toBe(8);
  });

  it("counts audio as 1 credit per started 10 s", () => {
    expect(priceOf({ output: "audio", durationMs: 12_000 })).toEqual({ credits: 2, breakdown: "0m12s audio" });
  });

  it("charges the minimum for images, metadata and empty outputs", () => {
    expect(priceOf({ output: "image" })).toEqual({ credits: MINIMUM_PRICE, breakdown: "image" });
    expect(priceOf({ output: "data" })).toEqual({ credits: MINIMUM_PRICE, breakdown: "metadata" });
    expect(priceOf({ output: "video", durationMs: 0, height: 1080 }).credits).toBe(MINIMUM_PRICE);
  });
});
