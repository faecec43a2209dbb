import type { FastifyInstance } from "fastify";
import { Gauge } from "@renderbus/telemetry";
import type { GatewayDeps } from "../deps.js";
import { OrgStreamSlots } from "./org-stream-slots.js";

/** Which route a stream serves. */
export type StreamKind = "job" | "webhook";

/** What the registry does with an open stream (an EventStream): find it by credential or org, and end it. */
export interface OpenStream {
  readonly kind: StreamKind;
  readonly orgId: string | undefined;
  /** Whether the stream authenticated with this API key (by id or by key hash). */
  usesApiKey(key: { apiKeyId?: string; keyHash?: string }): boolean;
  revoke(): void;
  recheckNow(): void;
  end(): void;
}

/** How much an unread stream may cost before it is dropped. */
export interface StreamLimits {
  /** How long a client may leave the socket's buffer full (`write()` returned false, no 'drain' yet). */
  drainTimeoutMs: number;
  /** Bytes that may wait unsent for one stream (the socket's buffer beyond the kernel's); more drops the stream. */
  maxBufferedBytes: number;
}

export const DEFAULT_STREAM_LIMITS: StreamLimits = { drainTimeoutMs: 30_000, maxBufferedBytes: 1024 * 1024 };

/**
 * Every SSE stream open on this gateway replica (job events and webhook events), with what they hold. It ends
 * streams whose API key is revoked or whose org changed the moment the news arrives over NATS, caps each org's
 * open streams across replicas (Redis leases, {@link OrgStreamSlots}), and ends every stream before the server
 * closes so shutdown does not wait on them.
 */
export class OpenStreams {
  readonly slots: OrgStreamSlots;
  /** Subscriptions, listeners and timers held by streams right now; back to its old value when they all end. */
  held = 0;
  private readonly streams = new Set<OpenStream>();
  private readonly unsubscribes: Array<() => void>;

  constructor(
    readonly deps: GatewayDeps,
    readonly limits: StreamLimits = DEFAULT_STREAM_LIMITS,
  ) {
    const { config, bus, redis } = deps;
    // A lease outlives three missed renewals (one per recheck) so a slow recheck never frees a live stream's slot.
    this.slots = new OrgStreamSlots(redis, { maxPerOrg: config.SSE_MAX_STREAMS_PER_ORG, leaseMs: Math.max(3 * config.SSE_RECHECK_MS, 30_000) });
    const revoked = (event: { apiKeyId?: string; keyHash?: string }) => {
      for (const stream of this.streams) if (stream.usesApiKey(event)) stream.revoke();
    };
    this.unsubscribes = [
      bus.listen<{ apiKeyId?: string; keyHash?: string }>("auth.events.api_key.revoked", revoked),
      bus.listen<{ apiKeyId?: string; keyHash?: string }>("gateway.notify.api_key.revoked", revoked),
      // A plan change can take webhooks away: the org's streams re-resolve their credential at once.
      bus.listen<{ orgId?: string }>("auth.events.org.updated", (event) => {
        for (const stream of this.streams) if (event.orgId && stream.orgId === event.orgId) stream.recheckNow();
      }),
    ];
    registerGauges(deps, this);
  }

  add(stream: OpenStream): void {
    this.streams.add(stream);
  }

  delete(stream: OpenStream): void {
    this.streams.delete(stream);
  }

  /** Streams being set up or open, of one kind or all. */
  count(kind?: StreamKind): number {
    let count = 0;
    for (const stream of this.streams) if (!kind || stream.kind === kind) count += 1;
    return count;
  }

  /** Ends every stream and stops listening for revocations. */
  close(): void {
    for (const unsubscribe of this.unsubscribes) unsubscribe();
    for (const stream of [...this.streams]) stream.end();
  }
}

const registries = new WeakMap<GatewayDeps, OpenStreams>();

/** The one {@link OpenStreams} of an app (both stream routes share it), closed before the server closes. */
export function openStreamsOf(app: FastifyInstance, deps: GatewayDeps): OpenStreams {
  let streams = registries.get(deps);
  if (!streams) {
    const created = new OpenStreams(deps);
    registries.set(deps, created);
    // Open streams would keep `server.close()` waiting until their clients leave.
    app.addHook("preClose", async () => created.close());
    streams = created;
  }
  return streams;
}

/**
 * `/metrics` shows what open streams hold, so a leak (something a stream acquired that outlived it) is visible in
 * production and measurable by the tests.
 */
function registerGauges(deps: GatewayDeps, streams: OpenStreams): void {
  const registry = deps.metrics;
  if (registry.getSingleMetric("gateway_sse_streams")) return;
  new Gauge({
    name: "gateway_sse_streams",
    help: "SSE streams being set up or open on this replica, by kind",
    labelNames: ["kind"],
    registers: [registry],
    collect() {
      this.set({ kind: "job" }, streams.count("job"));
      this.set({ kind: "webhook" }, streams.count("webhook"));
    },
  });
  new Gauge({
    name: "gateway_sse_held_resources",
    help: "NATS subscriptions, job watchers, listeners and timers held by SSE streams on this replica",
    registers: [registry],
    collect() {
      this.set(streams.held);
    },
  });
  new Gauge({
    name: "gateway_nats_subscriptions",
    help: "Core NATS subscriptions of the gateway's connection (each webhook stream holds three)",
    registers: [registry],
    collect() {
      // nats.js keeps the count on its protocol handler, not in its typed API; nothing is reported if that moves.
      const size = (deps.bus.nc as { protocol?: { subscriptions?: { size?: () => number } } }).protocol?.subscriptions?.size?.();
      if (typeof size === "number") this.set(size);
    },
  });
  new Gauge({
    name: "gateway_sse_job_watchers",
    help: "Job event listeners registered with the gateway's job event hub",
    registers: [registry],
    collect() {
      this.set(deps.jobEvents.watcherCount);
    },
  });
}
