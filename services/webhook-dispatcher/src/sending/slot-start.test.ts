import { describe, expect, it } from "vitest";
import type { DeliveryRow } from "../deliveries/delivery.js";
import { slotStart } from "./delivery-sender.js";

const row = {} as DeliveryRow;

describe("slotStart", () => {
  it("has no slot to wait for without a rate limit", () => {
    expect(slotStart({ row, delayMs: 0, slotAt: null }, 1000)).toBeUndefined();
  });

  it("starts at the slot's time on PostgreSQL's clock, however late the claim's answer arrived", () => {
    // Claimed 250 ms before the slot; the answer took 40 ms to arrive: still at the slot, not 40 ms after it.
    expect(slotStart({ row, delayMs: 250, slotAt: 10_250 }, 10_040)).toBe(10_250);
  });

  it("falls back to the delay when this clock is more than a second off PostgreSQL's", () => {
    expect(slotStart({ row, delayMs: 250, slotAt: 10_250 }, 50_000)).toBe(50_250);
  });
});
