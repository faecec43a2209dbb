import { describe, expect, it } from "vitest";
import { RecentBalances } from "./credit-check.js";

describe("balances kept between submissions' credit checks", () => {
  it("covers amounts up to the balance last seen, for one TTL", () => {
    let now = 0;
    const recent = new RecentBalances(1_000, () => now);
    expect(recent.covers("org_a", 1)).toBe(false);
    recent.remember("org_a", 5);
    expect(recent.covers("org_a", 5)).toBe(true);
    expect(recent.covers("org_a", 6)).toBe(false); // a batch larger than the balance seen is asked again
    expect(recent.covers("org_b", 1)).toBe(false);
    now = 999;
    expect(recent.covers("org_a", 1)).toBe(true);
    now = 1_000;
    expect(recent.covers("org_a", 1)).toBe(false);
  });

  it("forgets an org whose check was refused, and keeps nothing with a TTL of 0", () => {
    const recent = new RecentBalances(1_000);
    recent.remember("org_a", 5);
    recent.forget("org_a");
    expect(recent.covers("org_a", 1)).toBe(false);
    const off = new RecentBalances(0);
    off.remember("org_a", 5);
    expect(off.covers("org_a", 1)).toBe(false);
  });
});
