import { describe, expect, it } from "vitest";
import { parseConfig } from "@renderbus/config";
import { configSchema } from "./config.js";

const base = { MODE: "test", DATABASE_URL: "postgres://127.0.0.1/x", NATS_URL: "nats://127.0.0.1:4222", AUTH_GRPC_ADDRESS: "127.0.0.1:1" };

describe("dispatcher config", () => {
  it("waits 2 s at most for an attempt slot, below the 30 s ack wait", () => {
    const config = parseConfig(configSchema, base);
    expect(config.DISPATCHER_INGEST_SLOT_WAIT_MS).toBe(2000);
    expect(config.DISPATCHER_ACK_WAIT_MS).toBe(30_000);
  });

  it("has the documented webhook defaults: 4 attempts, 8 on the extended schedule, auto-disable after 24 h and 20 failures", () => {
    const config = parseConfig(configSchema, base);
    expect(config.WEBHOOK_RETRY_SCHEDULE_MS).toEqual([5000, 25_000, 125_000]);
    // An attempt fails without a 2xx within 10 s.
    expect(config.WEBHOOK_TIMEOUT_MS).toBe(10_000);
    // The seed's delays, then 10 min, 1 h, 6 h, 24 h: 7 delays, 8 attempts.
    expect(config.WEBHOOK_EXTENDED_RETRY_SCHEDULE_MS).toEqual([5000, 25_000, 125_000, 600_000, 3_600_000, 21_600_000, 86_400_000]);
    expect(config.WEBHOOK_DISABLE_AFTER).toBe(86_400_000);
    expect(config.WEBHOOK_DISABLE_MIN_FAILURES).toBe(20);
    expect(config.WEBHOOK_ENDPOINTS_MAX).toBe(20);
    expect(config.WEBHOOK_RECOVER_MAX).toBe(10_000);
    expect(config.DATABASE_MAX_CONNECTIONS).toBe(20);
  });

  it("reads WEBHOOK_DISABLE_AFTER as a duration with its unit, and refuses a bare number", () => {
    expect(parseConfig(configSchema, { ...base, WEBHOOK_DISABLE_AFTER: "90m" }).WEBHOOK_DISABLE_AFTER).toBe(5_400_000);
    expect(parseConfig(configSchema, { ...base, WEBHOOK_DISABLE_AFTER: "2d" }).WEBHOOK_DISABLE_AFTER).toBe(172_800_000);
    expect(() => parseConfig(configSchema, { ...base, WEBHOOK_DISABLE_AFTER_MS: "86400000" })).toThrow(/WEBHOOK_DISABLE_AFTER_MS: was renamed: set WEBHOOK_DISABLE_AFTER/);
    for (const value of ["86400", "0h", "-1h", "1.5h", "24 hours", ""]) {
      expect(() => parseConfig(configSchema, { ...base, WEBHOOK_DISABLE_AFTER: value }), value).toThrow(/WEBHOOK_DISABLE_AFTER/);
    }
  });

  it("refuses a slot wait as long as the ack wait: the held event would go to another replica meanwhile", () => {
    expect(() => parseConfig(configSchema, { ...base, DISPATCHER_INGEST_SLOT_WAIT_MS: "30000" })).toThrow(/DISPATCHER_INGEST_SLOT_WAIT_MS/);
  });
});
