import { describe, expect, it } from "vitest";
import { ID_PREFIXES, isId, newId, pooledRandom, timeOfId } from "./index.js";

describe("newId", () => {
  it.each(ID_PREFIXES)("mints %s_<ULID> ids that isId accepts", (prefix) => {
    const id = newId(prefix);
    expect(id).toMatch(new RegExp(`^${prefix}_[0-9A-HJKMNP-TV-Z]{26}$`));
    expect(isId(prefix, id)).toBe(true);
  });

  it("sorts lexicographically in creation order, also within one millisecond", () => {
    const ids = Array.from({ length: 1000 }, () => newId("job"));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("encodes the creation time", () => {
    const before = Date.now();
    const id = newId("evt");
    expect(timeOfId(id)).toBeGreaterThanOrEqual(before);
    expect(timeOfId(id)).toBeLessThanOrEqual(Date.now());
  });
});

describe("the random source of ids", () => {
  it("stays in [0, 1) and spreads evenly over the 32 ULID characters across pool refills", () => {
    const counts = new Array<number>(32).fill(0);
    const draws = 32 * 2_000; // 64,000 draws: ~16 refills of the pool
    for (let index = 0; index < draws; index += 1) {
      const value = pooledRandom();
      expect(value >= 0 && value < 1).toBe(true);
      counts[Math.floor(value * 32)]! += 1;
    }
    // Each character expects 2,000 draws; 1,700-2,300 is beyond 6 standard deviations (~44) either way.
    for (const count of counts) expect(count).toBeGreaterThan(1_700);
    for (const count of counts) expect(count).toBeLessThan(2_300);
  });
});

describe("isId", () => {
  it("rejects another prefix, a malformed ULID and non-strings", () => {
    const jobId = newId("job");
    expect(isId("org", jobId)).toBe(false);
    expect(isId("job", "job_123")).toBe(false);
    expect(isId("job", `${jobId}x`)).toBe(false);
    expect(isId("job", jobId.toLowerCase())).toBe(false);
    expect(isId("job", `job_${"I".repeat(26)}`)).toBe(false);
    expect(isId("job", undefined)).toBe(false);
    expect(isId("job", 42)).toBe(false);
  });
});
