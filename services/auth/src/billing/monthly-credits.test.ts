import { describe, expect, it } from "vitest";
import { addMonthsUtc, creditMonthAt, nextCreditRenewal } from "./monthly-credits.js";

const utc = (iso: string) => Date.parse(iso);

describe("credit months", () => {
  it("add calendar months in UTC, ending a 31st anchor on the last day of shorter months", () => {
    expect(addMonthsUtc(utc("2026-01-15T10:00:00Z"), 1)).toBe(utc("2026-02-15T10:00:00Z"));
    expect(addMonthsUtc(utc("2026-01-31T10:00:00Z"), 1)).toBe(utc("2026-02-28T10:00:00Z"));
    expect(addMonthsUtc(utc("2026-01-31T10:00:00Z"), 2)).toBe(utc("2026-03-31T10:00:00Z"));
    expect(addMonthsUtc(utc("2028-01-31T10:00:00Z"), 1)).toBe(utc("2028-02-29T10:00:00Z"));
    expect(addMonthsUtc(utc("2026-12-15T00:00:00Z"), 1)).toBe(utc("2027-01-15T00:00:00Z"));
    expect(addMonthsUtc(utc("2026-11-30T23:59:59Z"), 15)).toBe(utc("2028-02-29T23:59:59Z"));
  });

  it("number the months from the org's creation, the month turning at the anchor's exact time", () => {
    const created = utc("2026-01-31T10:00:00Z");
    expect(creditMonthAt(created, created)).toBe(0);
    expect(creditMonthAt(created, utc("2026-02-28T09:59:59Z"))).toBe(0);
    expect(creditMonthAt(created, utc("2026-02-28T10:00:00Z"))).toBe(1);
    expect(creditMonthAt(created, utc("2026-03-31T09:59:59Z"))).toBe(1);
    expect(creditMonthAt(created, utc("2027-01-31T10:00:00Z"))).toBe(12);
    expect(nextCreditRenewal(created, utc("2026-03-05T00:00:00Z"))).toBe(utc("2026-03-31T10:00:00Z"));
  });
});
