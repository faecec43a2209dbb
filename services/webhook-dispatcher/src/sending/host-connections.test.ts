import { describe, expect, it } from "vitest";
import { HostConnections } from "./host-connections.js";

const HOST = "https://hooks.example.com";

/** Acquires and records the order in which connections are granted. */
function recorder(connections: HostConnections) {
  const granted: string[] = [];
  const acquire = (tenant: string, label = tenant) => {
    const connection = connections.acquire(HOST, tenant);
    void connection.granted.then(
      () => granted.push(label),
      () => undefined,
    );
    return connection;
  };
  return { granted, acquire };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("a host's connections shared between tenants", () => {
  it("grants at once while the host has a free connection, then makes attempts wait", async () => {
    const connections = new HostConnections(2);
    const { granted, acquire } = recorder(connections);
    acquire("a", "a1");
    acquire("b", "b1");
    acquire("a", "a2");
    await settle();
    expect(granted).toEqual(["a1", "b1"]);
    expect(connections.heldBy(HOST)).toEqual({ a: 1, b: 1 });
  });

  it("gives a freed connection to the waiting tenant holding the fewest, not to the attempt that queued first", async () => {
    const connections = new HostConnections(4);
    const { granted, acquire } = recorder(connections);
    // A slow tenant holds the whole host and queues more; another tenant queues after it.
    const held = [1, 2, 3, 4].map((n) => acquire("slow", `slow${n}`));
    acquire("slow", "slow5");
    acquire("slow", "slow6");
    acquire("fast", "fast1");
    acquire("fast", "fast2");
    await settle();
    held[0]!.release();
    await settle();
    expect(granted.slice(4)).toEqual(["fast1"]);
    held[1]!.release();
    await settle();
    // fast holds 1, slow 2: fast again, although slow5 waited longer.
    expect(granted.slice(4)).toEqual(["fast1", "fast2"]);
    held[2]!.release();
    await settle();
    expect(granted.slice(4)).toEqual(["fast1", "fast2", "slow5"]);
    expect(connections.heldBy(HOST)).toEqual({ slow: 2, fast: 2 });
  });

  it("takes turns in arrival order between tenants holding as many, and keeps each tenant's own order", async () => {
    const connections = new HostConnections(1);
    const { granted, acquire } = recorder(connections);
    const first = acquire("x", "x0");
    const waiting = [acquire("b", "b1"), acquire("a", "a1"), acquire("b", "b2"), acquire("a", "a2")];
    await settle();
    first.release();
    for (const connection of waiting) {
      await settle();
      connection.release();
    }
    await settle();
    expect(granted).toEqual(["x0", "b1", "a1", "b2", "a2"]);
  });

  it("rejects a cancelled wait with its reason and never grants it; a release of what was never granted gives nothing back", async () => {
    const connections = new HostConnections(1);
    const { granted, acquire } = recorder(connections);
    const holder = acquire("a", "a1");
    const cancelled = acquire("b", "b1");
    const next = acquire("c", "c1");
    cancelled.cancel(new Error("connection-wait after 5 ms"));
    await expect(cancelled.granted).rejects.toThrow("connection-wait after 5 ms");
    cancelled.release();
    await settle();
    expect(granted).toEqual(["a1"]);
    holder.release();
    holder.release();
    await settle();
    expect(granted).toEqual(["a1", "c1"]);
    expect(connections.heldBy(HOST)).toEqual({ c: 1 });
    next.release();
    expect(connections.heldBy(HOST)).toEqual({});
  });
});
