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

  it("refuses a slot wait as long as the ack wait: the held event would go to another replica meanwhile", () => {
    expect(() => parseConfig(configSchema, { ...base, DISPATCHER_INGEST_SLOT_WAIT_MS: "30000" })).toThrow(/DISPATCHER_INGEST_SLOT_WAIT_MS/);
  });
});
