import { trace } from "@opentelemetry/api";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTracing, tracer, type Tracing } from "@renderbus/telemetry";
import { testInfra, testNamespace } from "@renderbus/testing";
import { Bus, durableForSubject, type BusMessage, type ConsumerHandle } from "./bus.js";
import type { StreamSpec } from "./streams.js";

const EVENTS: StreamSpec = { name: "BUS_TEST", subjects: ["bustest.>"], duplicateWindowMs: 60_000 };

let namespace: string;
let bus: Bus;
let tracing: Tracing;
const opened: Bus[] = [];

async function connect(name: string): Promise<Bus> {
  const connected = await Bus.connect({ url: testInfra().natsUrl, name, namespace });
  opened.push(connected);
  return connected;
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  // A real tracer provider, so an active span has a valid trace id to propagate.
  tracing = await startTracing({ service: "bus-test", exporter: new InMemorySpanExporter() });
  namespace = testNamespace("bus");
  bus = await connect("bus-test");
  await bus.ensureStreams([EVENTS]);
});

afterAll(async () => {
  // The server may be shared with other test files: leave none of this file's streams behind.
  for await (const name of bus.jsm.streams.names()) {
    if (name.startsWith(`${namespace}_`)) await bus.jsm.streams.delete(name);
  }
  for (const each of opened) await each.close();
  await tracing?.shutdown();
});

describe("Bus.ensureStreams", () => {
  it("is idempotent when called twice", async () => {
    const spec: StreamSpec = { name: "TWICE", subjects: ["twice.>"] };
    await bus.ensureStreams([spec]);
    await bus.publish("twice.a", { n: 1 });
    await bus.ensureStreams([spec]);
    const info = await bus.jsm.streams.info(bus.streamName(spec));
    expect(info.config.subjects).toEqual([`${namespace}.twice.>`]);
    expect(info.state.messages).toBe(1);
  });

  it("is idempotent when two processes call it at the same time", async () => {
    const spec: StreamSpec = { name: "CONCURRENT", subjects: ["concurrent.>"] };
    const [a, b] = await Promise.all([connect("ensure-a"), connect("ensure-b")]);
    await Promise.all([a.ensureStreams([spec]), b.ensureStreams([spec]), a.ensureStreams([spec])]);
    const info = await bus.jsm.streams.info(bus.streamName(spec));
    expect(info.config.name).toBe(`${namespace}_CONCURRENT`);
  });
});

describe("Bus.publish", () => {
  it("stores a message published twice with the same msgId once", async () => {
    const spec: StreamSpec = { name: "DEDUP", subjects: ["dedup.>"] };
    await bus.ensureStreams([spec]);
    const first = await bus.publish("dedup.x", { n: 1 }, { msgId: "evt_same" });
    const second = await bus.publish("dedup.x", { n: 1 }, { msgId: "evt_same" });
    expect(first.duplicate).toBe(false);
    expect(second.duplicate).toBe(true);
    expect(second.seq).toBe(first.seq);
    expect((await bus.jsm.streams.info(bus.streamName(spec))).state.messages).toBe(1);
  });
});

describe("Bus.consume", () => {
  it("splits the messages of one durable consumer between two consumers", async () => {
    const spec: StreamSpec = { name: "SHARED", subjects: ["shared.>"] };
    await bus.ensureStreams([spec]);
    const [busA, busB] = await Promise.all([connect("shared-a"), connect("shared-b")]);
    const seenBy = { a: [] as number[], b: [] as number[] };
    const handler = (who: "a" | "b") => async (message: BusMessage<{ n: number }>) => {
      seenBy[who].push(message.data.n);
      await sleep(2); // lets the other consumer take its share
    };
    const consumerA = await busA.consume({ stream: spec, durable: "shared", handler: handler("a"), concurrency: 4 });
    const consumerB = await busB.consume({ stream: spec, durable: "shared", handler: handler("b"), concurrency: 4 });
    const total = 200;
    await Promise.all(Array.from({ length: total }, (_, n) => bus.publish("shared.item", { n }, { msgId: `m${n}` })));
    await until(() => seenBy.a.length + seenBy.b.length >= total);
    await sleep(200);
    await Promise.all([consumerA.stop(), consumerB.stop()]);

    expect(seenBy.a.length).toBeGreaterThan(0);
    expect(seenBy.b.length).toBeGreaterThan(0);
    const all = [...seenBy.a, ...seenBy.b].sort((x, y) => x - y);
    expect(all).toEqual(Array.from({ length: total }, (_, n) => n));
  });

  it("redelivers a message after nak(delay), later and with deliveryCount 2", async () => {
    const spec: StreamSpec = { name: "NAK", subjects: ["nak.>"] };
    await bus.ensureStreams([spec]);
    const deliveries: { at: number; count: number; data: unknown }[] = [];
    const consumer = await bus.consume({
      stream: spec,
      durable: "nak",
      handler: async (message) => {
        deliveries.push({ at: Date.now(), count: message.deliveryCount, data: message.data });
        return message.deliveryCount === 1 ? { nakDelayMs: 700 } : undefined;
      },
    });
    await bus.publish("nak.x", { hello: "again" });
    await until(() => deliveries.length >= 2);
    await sleep(300);
    await consumer.stop();

    expect(deliveries.map((delivery) => delivery.count)).toEqual([1, 2]);
    expect(deliveries[1]!.data).toEqual({ hello: "again" });
    expect(deliveries[1]!.at - deliveries[0]!.at).toBeGreaterThanOrEqual(600);
  });

  it("does not redeliver a message the handler terminated", async () => {
    const spec: StreamSpec = { name: "TERM", subjects: ["term.>"] };
    await bus.ensureStreams([spec]);
    let deliveries = 0;
    const consumer: ConsumerHandle = await bus.consume({
      stream: spec,
      durable: "term",
      ackWaitMs: 300,
      handler: async () => {
        deliveries += 1;
        return { term: true };
      },
    });
    await bus.publish("term.x", { poison: true });
    await until(() => deliveries >= 1);
    // Well past ack_wait: an unacknowledged message would have come back by now.
    await sleep(1200);
    await consumer.stop();

    expect(deliveries).toBe(1);
    const info = await bus.jsm.consumers.info(bus.streamName(spec), "term");
    expect(info.num_ack_pending).toBe(0);
    expect(info.num_pending).toBe(0);
  });

  it("acks every message its handler finished, so none stays pending on the consumer", async () => {
    const spec: StreamSpec = { name: "ACK", subjects: ["ack.>"] };
    await bus.ensureStreams([spec]);
    let handled = 0;
    const consumer = await bus.consume({
      stream: spec,
      durable: "ack",
      concurrency: 4,
      handler: async () => {
        handled += 1;
      },
    });
    const acks = await Promise.all(Array.from({ length: 20 }, (_, n) => bus.publish("ack.x", { n })));
    const lastSequence = Math.max(...acks.map((ack) => ack.seq));
    // The ack floor only moves once the server has the acks: this waits for them, not for a fixed time.
    await until(async () => {
      const info = await bus.jsm.consumers.info(bus.streamName(spec), "ack");
      return info.ack_floor.stream_seq === lastSequence && info.num_ack_pending === 0;
    });
    await consumer.stop();
    expect(handled).toBe(20);
  });

  it("redelivers a message whose handler threw", async () => {
    const spec: StreamSpec = { name: "THROW", subjects: ["throw.>"] };
    await bus.ensureStreams([spec]);
    const counts: number[] = [];
    const consumer = await bus.consume({
      stream: spec,
      durable: "throw",
      retryDelayMs: 100,
      handler: async (message) => {
        counts.push(message.deliveryCount);
        if (message.deliveryCount === 1) throw new Error("transient");
      },
    });
    await bus.publish("throw.x", {});
    await until(() => counts.length >= 2);
    await consumer.stop();
    expect(counts).toEqual([1, 2]);
  });

  it("continues the publisher's trace in the handler (traceparent header)", async () => {
    let publisherTraceId = "";
    let received: { traceId: string | undefined; headers: Record<string, string>; subject: string; msgId: string } | undefined;
    const consumer = await bus.consume({
      stream: EVENTS,
      durable: "trace",
      filterSubjects: ["bustest.traced"],
      handler: async (message) => {
        received = {
          traceId: trace.getActiveSpan()?.spanContext().traceId,
          headers: message.headers,
          subject: message.subject,
          msgId: message.msgId,
        };
      },
    });
    await tracer().startActiveSpan("publisher", async (span) => {
      publisherTraceId = span.spanContext().traceId;
      await bus.publish("bustest.traced", { ok: true }, { msgId: "evt_traced", headers: { "Rb-Event-Type": "test.traced" } });
      span.end();
    });
    await until(() => received !== undefined);
    await consumer.stop();

    expect(publisherTraceId).toMatch(/^[0-9a-f]{32}$/);
    expect(publisherTraceId).not.toBe("0".repeat(32));
    expect(received!.headers.traceparent).toContain(publisherTraceId);
    expect(received!.traceId).toBe(publisherTraceId);
    expect(received!.subject).toBe("bustest.traced");
    expect(received!.msgId).toBe("evt_traced");
    expect(received!.headers["Rb-Event-Type"]).toBe("test.traced");
  });

  it("gives several filter subjects one durable each and never hands the handler another subject", async () => {
    const spec: StreamSpec = { name: "MULTI", subjects: ["multi.>"] };
    await bus.ensureStreams([spec]);
    const seen: string[] = [];
    const consumer = await bus.consume({
      stream: spec,
      durable: "multi",
      filterSubjects: ["multi.job.completed", "multi.job.failed"],
      concurrency: 2,
      handler: async (message) => void seen.push(message.subject),
    });
    for (const event of ["queued", "completed", "queued", "failed", "dispatched", "completed"]) await bus.publish(`multi.job.${event}`, { event });
    await until(() => seen.length >= 3);
    await sleep(200);
    await consumer.stop();

    expect(seen.sort()).toEqual(["multi.job.completed", "multi.job.completed", "multi.job.failed"]);
    const names: string[] = [];
    for await (const info of bus.jsm.consumers.list(bus.streamName(spec))) names.push(info.name);
    expect(names.sort()).toEqual([durableForSubject("multi", "multi.job.completed"), durableForSubject("multi", "multi.job.failed")].sort());
    expect(names.every((name) => !/[.*>]/.test(name))).toBe(true);
  });

  it("takes over from the durable it replaces: what that one acked is not seen again, what it had not is, and it is deleted", async () => {
    const spec: StreamSpec = { name: "TAKEOVER", subjects: ["takeover.>"] };
    await bus.ensureStreams([spec]);
    const oldSeen: number[] = [];
    const old = await bus.consume<{ n: number }>({ stream: spec, durable: "svc", handler: async (message) => void oldSeen.push(message.data.n) });
    for (let n = 1; n <= 4; n += 1) await bus.publish(n % 2 ? "takeover.a" : "takeover.b", { n });
    await until(() => oldSeen.length === 4);
    await old.stop();
    // The old durable is gone; these arrive while no consumer runs.
    for (let n = 5; n <= 8; n += 1) await bus.publish(n % 2 ? "takeover.a" : "takeover.b", { n });
    await until(async () => (await bus.jsm.consumers.info(bus.streamName(spec), "svc")).ack_floor.stream_seq === 4);

    const newSeen: number[] = [];
    const [first, second] = await Promise.all(
      [connect("takeover-a"), connect("takeover-b")].map(async (replica) =>
        (await replica).consume<{ n: number }>({
          stream: spec,
          durable: "svc",
          filterSubjects: ["takeover.a", "takeover.b"],
          replaces: ["svc"],
          handler: async (message) => void newSeen.push(message.data.n),
        }),
      ),
    );
    await until(() => newSeen.length >= 4);
    await sleep(200);
    await Promise.all([first!.stop(), second!.stop()]);

    expect(newSeen.sort((x, y) => x - y)).toEqual([5, 6, 7, 8]);
    const names: string[] = [];
    for await (const info of bus.jsm.consumers.list(bus.streamName(spec))) names.push(info.name);
    expect(names.sort()).toEqual([durableForSubject("svc", "takeover.a"), durableForSubject("svc", "takeover.b")]);
  });

  it("keeps a durable's starting point when it is declared again (an existing durable is only updated)", async () => {
    const spec: StreamSpec = { name: "REDECLARE", subjects: ["redeclare.>"] };
    await bus.ensureStreams([spec]);
    await bus.publish("redeclare.x", { n: 1 });
    const seen: number[] = [];
    const options = { stream: spec, durable: "late", deliverPolicy: "new" as const, handler: async (message: BusMessage<{ n: number }>) => void seen.push(message.data.n) };
    const first = await bus.consume(options);
    await bus.publish("redeclare.x", { n: 2 });
    await until(() => seen.length === 1);
    await first.stop();
    const again = await bus.consume({ ...options, deliverPolicy: "all" as const, ackWaitMs: 5_000 });
    await bus.publish("redeclare.x", { n: 3 });
    await until(() => seen.length === 2);
    await sleep(200);
    await again.stop();

    expect(seen).toEqual([2, 3]);
    expect((await bus.jsm.consumers.info(bus.streamName(spec), "late")).config.ack_wait).toBe(5_000 * 1_000_000);
  });
});

describe("Bus.listen", () => {
  it("calls onSubscribed once the server has the subscription: a message published from another connection then arrives", async () => {
    const other = await connect("bus-listen-publisher");
    const received: Array<{ n: number; subject: string }> = [];
    let onSubscribed!: () => void;
    const subscribed = new Promise<void>((resolve) => (onSubscribed = resolve));
    const stop = bus.listen<{ n: number }>("listen.>", (data, subject) => received.push({ n: data.n, subject }), { onSubscribed });
    try {
      await subscribed;
      other.notify("listen.one", { n: 1 });
      await until(() => received.length === 1);
      expect(received).toEqual([{ n: 1, subject: "listen.one" }]);
    } finally {
      stop();
    }
  });
});
