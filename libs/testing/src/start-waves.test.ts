import { describe, expect, it } from "vitest";
import { SERVICES, START_WAVES } from "./system.js";

describe("START_WAVES (the order a test system's services start in)", () => {
  it("starts every service exactly once", () => {
    expect(START_WAVES.flat().sort()).toEqual([...SERVICES].sort());
  });

  it("starts auth and jobs, which declare the streams the others consume, before the others", () => {
    expect([...START_WAVES[0]!].sort()).toEqual(["auth", "jobs"]);
  });
});
