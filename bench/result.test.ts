import { describe, expect, it } from "vitest";
import { atLeast, below, notJudged } from "./result.js";

describe("target checks", () => {
  it("spells out a small shortfall of a ratio instead of rounding it to nothing", () => {
    expect(atLeast("gateway 2 vs 1 replica", 1.76, 1.8, "x")).toMatchObject({ met: false, missedBy: "0.04x short" });
    expect(atLeast("gateway 4 vs 1 replica", 2.37, 3.4, "x")).toMatchObject({ met: false, missedBy: "1.03x short" });
  });

  it("says nothing of a target met, and how far over a maximum a figure is", () => {
    expect(atLeast("x", 2.06, 1.8, "x").missedBy).toBeUndefined();
    expect(below("p99", 20.4, 20, " ms")).toMatchObject({ met: false, missedBy: "0.4 ms over" });
  });

  it("reports a figure without a verdict, with the reason and without a shortfall", () => {
    expect(notJudged(atLeast("deliveries/s vs bare POST loop", 20, 50, "%"), "replaced by section 10")).toEqual({
      name: "deliveries/s vs bare POST loop",
      target: ">= 50%",
      actual: "20%",
      met: null,
      reason: "replaced by section 10",
    });
  });
});
