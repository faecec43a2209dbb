import { randomUUID, timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import { AppError, serviceUnavailable, unauthorized } from "@renderbus/errors";
import type { AuthContext } from "@renderbus/rpc";
import { authenticate } from "../auth/authenticate.js";
import { keyHashOf } from "../auth/credential-resolver.js";
import type { OpenStream, OpenStreams, StreamKind } from "./open-streams.js";

const HEARTBEAT_MS = 15_000;
/** Rechecks that could not reach the auth service in a row before the stream ends (it cannot prove it is valid). */
const MAX_FAILED_RECHECKS = 3;

/** Thrown during set-up when the client has already gone: nothing is answered and nothing is wired. */
class ClientGone extends Error {
  override readonly name = "ClientGone";
}

/** What a stream route adds to the shared lifecycle of {@link serveEventStream}. */
export interface EventStreamSpec<Prepared> {
  kind: StreamKind;
  /** Checks the caller may open this stream and loads what it starts from; an AppError is answered as usual. */
  prepare(auth: AuthContext): Promise<Prepared> | Prepared;
  /** Applied to the re-resolved context on every recheck; throws when it no longer allows the stream (plan lost). */
  revalidate?(auth: AuthContext): void;
  /** Wires the stream's subscriptions (through `stream.hold`) and writes its first events. */
  start(stream: EventStream, prepared: Prepared): Promise<void> | void;
}

/**
 * One SSE response from the moment its request arrives. Its 'close' listener is registered before anything is
 * awaited, so a client that leaves during set-up ends it; everything it acquires is taken through {@link hold} and
 * released exactly once when it ends, including things acquired after it ended (released at once).
 *
 * While open it re-resolves the request's own credential every `SSE_RECHECK_MS` (and at once on a revocation
 * event), ends after `SSE_MAX_LIFETIME_MS`, holds one of its org's `SSE_MAX_STREAMS_PER_ORG` slots, and writes
 * with backpressure: past `write() === false` it waits for 'drain' at most `drainTimeoutMs` and lets at most
 * `maxBufferedBytes` queue before it drops the client (see {@link StreamLimits}).
 */
export class EventStream implements OpenStream {
  readonly id = `sse_${randomUUID()}`;
  /** The credential's current context: refreshed by every successful recheck. */
  auth: AuthContext | undefined;
  private readonly headers: { authorization?: string; cookie?: string };
  private readonly keyHash: string | undefined;
  private readonly releases: Array<() => void> = [];
  private ended = false;
  private opened = false;
  private rechecking = false;
  private failedRechecks = 0;
  private drainTimer: NodeJS.Timeout | undefined;
  private revalidate: ((auth: AuthContext) => void) | undefined;
  /** Why the stream was ended by the server (revoked, plan lost), if it was. */
  private failure: AppError | undefined;

  constructor(
    private readonly request: FastifyRequest,
    private readonly reply: FastifyReply,
    private readonly streams: OpenStreams,
    readonly kind: StreamKind,
  ) {
    const { authorization, cookie } = request.headers;
    this.headers = { ...(authorization !== undefined ? { authorization } : {}), ...(cookie !== undefined ? { cookie } : {}) };
    const bearer = authorization !== undefined ? /^Bearer ([^\s]+)$/i.exec(authorization.trim())?.[1] : undefined;
    this.keyHash = bearer ? keyHashOf(bearer) : undefined;
    // 'close' on the response fires when it finishes or when the connection drops, whichever comes first.
    reply.raw.once("close", () => this.end());
    streams.add(this);
  }

  get orgId(): string | undefined {
    return this.auth?.orgId;
  }

  /** True once the stream has ended or its client has gone. */
  get gone(): boolean {
    return this.ended || this.reply.raw.destroyed || this.request.raw.socket?.destroyed === true;
  }

  /** Ends the stream and throws {@link ClientGone} when the client left during an await of set-up. */
  assertClientPresent(): void {
    if (!this.gone) return;
    this.end();
    throw new ClientGone();
  }

  /** True when a revocation event names the API key this stream was opened with. */
  usesApiKey({ apiKeyId, keyHash }: { apiKeyId?: string; keyHash?: string }): boolean {
    if (!this.auth || this.auth.credential !== "api_key") return false;
    return (apiKeyId !== undefined && this.auth.apiKeyId === apiKeyId) || (keyHash !== undefined && this.keyHash !== undefined && sameHash(this.keyHash, keyHash));
  }

  /**
   * Keeps `release` until the stream ends (a subscription's unsubscribe, a timer's clear). If the stream has already
   * ended, releases at once: a late subscription never outlives its stream.
   */
  hold(release: () => void): void {
    if (this.ended) return release();
    this.streams.held += 1;
    this.releases.push(() => {
      this.streams.held -= 1;
      release();
    });
  }

  every(ms: number, task: () => void): void {
    const timer = setInterval(task, ms);
    this.hold(() => clearInterval(timer));
  }

  after(ms: number, task: () => void): void {
    const timer = setTimeout(task, ms);
    this.hold(() => clearTimeout(timer));
  }

  /** Writes one SSE event (nothing once the stream has ended). */
  send(event: string, data: unknown, id?: string): void {
    this.write(`event: ${event}\n${id !== undefined ? `id: ${id}\n` : ""}data: ${JSON.stringify(data)}\n\n`);
  }

  /** Ends the stream because its credential was revoked: the client gets the 401 body as a last `error` event. */
  revoke(): void {
    this.fail(unauthorized());
  }

  /** Re-resolves the credential now (an event said it may have changed). */
  recheckNow(): void {
    void this.recheck();
  }

  /**
   * Ends the stream once: a last event if it was open, then the response, then everything it held. Safe to call
   * from any listener, any number of times.
   */
  end(lastEvent?: string): void {
    if (this.ended) return;
    this.ended = true;
    this.streams.delete(this);
    if (this.drainTimer) clearTimeout(this.drainTimer);
    const raw = this.reply.raw;
    if (this.opened && !raw.destroyed) {
      if (lastEvent) raw.write(lastEvent);
      raw.end();
      // A client that does not read what is left would hold the socket (and its buffer) forever.
      if (raw.writableLength > 0) {
        const timer = setTimeout(() => raw.destroy(), this.streams.limits.drainTimeoutMs).unref();
        raw.once("close", () => clearTimeout(timer));
      }
    }
    for (const release of this.releases.splice(0)) release();
  }

  /** Ends a stream whose client stopped reading: the connection is cut, not left to flush a buffer nobody reads. */
  private drop(reason: string): void {
    this.streams.deps.logger.info({ orgId: this.orgId, kind: this.kind, bufferedBytes: this.reply.raw.writableLength }, reason);
    this.end();
    this.reply.raw.destroy();
  }

  /** Claims one of the org's stream slots; answers RATE_LIMITED when the org has `SSE_MAX_STREAMS_PER_ORG` open. */
  async claimSlot(auth: AuthContext): Promise<void> {
    const { slots, deps } = this.streams;
    let claimed: boolean;
    try {
      claimed = await slots.claim(auth.orgId, this.id);
    } catch (error) {
      deps.logger.warn({ err: error, orgId: auth.orgId }, "sse slot claim failed");
      throw serviceUnavailable();
    }
    if (!claimed) {
      throw new AppError("RATE_LIMITED", `At most ${deps.config.SSE_MAX_STREAMS_PER_ORG} event streams may be open per organization`, { retryAfterSeconds: 5 });
    }
    // Released even when the client left while the claim was in flight (hold releases at once after the end).
    this.hold(() => void slots.release(auth.orgId, this.id).catch((error: unknown) => deps.logger.warn({ err: error, orgId: auth.orgId }, "sse slot release failed")));
  }

  /** Takes the response over from Fastify, writes the SSE headers and starts the heartbeat, recheck and lifetime timers. */
  open(auth: AuthContext, revalidate: ((auth: AuthContext) => void) | undefined): void {
    const { config } = this.streams.deps;
    this.auth = auth;
    this.revalidate = revalidate;
    this.reply.hijack();
    this.reply.raw.writeHead(200, {
      // Several Set-Cookie values (the dashboard's CSRF cookie among them) stay separate headers.
      ...Object.fromEntries(Object.entries(this.reply.getHeaders()).map(([name, value]) => [name, Array.isArray(value) ? value : String(value)])),
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-cache, no-transform",
      Connection: "keep-alive",
      "X-Accel-Buffering": "no",
    });
    this.opened = true;
    this.every(HEARTBEAT_MS, () => {
      // A comment line keeps proxies from closing an idle stream; pointless while the client is not reading.
      if (!this.reply.raw.writableNeedDrain) this.write(": keep-alive\n\n");
    });
    this.every(config.SSE_RECHECK_MS, () => void this.recheck());
    // Clients reconnect (EventSource does on its own) and authenticate afresh.
    this.after(config.SSE_MAX_LIFETIME_MS, () => this.end());
  }

  private write(chunk: string): void {
    if (this.ended || !this.opened) return;
    const raw = this.reply.raw;
    const { maxBufferedBytes, drainTimeoutMs } = this.streams.limits;
    // Measured before the write, so one event larger than the cap still goes out (and then waits for 'drain').
    if (raw.writableLength > maxBufferedBytes) return this.drop("sse client stopped reading; stream dropped");
    if (raw.write(chunk) || this.drainTimer) return;
    // The socket's buffer is full: the client gets drainTimeoutMs to read it before the stream is dropped.
    this.drainTimer = setTimeout(() => this.drop("sse client did not drain; stream dropped"), drainTimeoutMs);
    raw.once("drain", () => {
      clearTimeout(this.drainTimer);
      this.drainTimer = undefined;
    });
  }

  /** The error that ended the stream before it opened (a revocation during set-up), for the answer. */
  get failedWith(): AppError | undefined {
    return this.failure;
  }

  private fail(error: AppError): void {
    this.failure ??= error;
    this.end(`event: error\ndata: ${JSON.stringify(error.toBody())}\n\n`);
  }

  /**
   * Re-resolves the request's own credential through the resolver, as a new request would: a revoked key, a
   * signed-out session or a removed member fails it and ends the stream with that error. The key's cache entry is
   * dropped first so the answer comes from the auth service even if this replica missed the revocation message
   * (SECURITY-AUDIT finding 14). An unreachable auth service is tolerated {@link MAX_FAILED_RECHECKS} times in a row.
   */
  private async recheck(): Promise<void> {
    if (this.ended || this.rechecking || !this.auth) return;
    const { deps } = this.streams;
    const previous = this.auth;
    this.rechecking = true;
    try {
      if (this.keyHash) deps.credentials.forgetApiKey({ keyHash: this.keyHash });
      const auth = await deps.credentials.resolve(this.headers);
      if (this.ended) return;
      // A session that switched organizations no longer speaks for the org this stream shows.
      if (auth.orgId !== previous.orgId) throw unauthorized();
      this.revalidate?.(auth);
      this.auth = auth;
      this.failedRechecks = 0;
      await this.streams.slots.renew(auth.orgId, this.id).catch((error: unknown) => deps.logger.warn({ err: error, orgId: auth.orgId }, "sse slot renewal failed"));
      // The lease was renewed after the stream ended: give the slot back again.
      if (this.ended) await this.streams.slots.release(auth.orgId, this.id).catch(() => undefined);
    } catch (error) {
      if (error instanceof AppError && error.code !== "SERVICE_UNAVAILABLE" && error.code !== "INTERNAL_ERROR") return this.fail(error);
      this.failedRechecks += 1;
      deps.logger.warn({ err: error, orgId: previous.orgId, kind: this.kind, failedRechecks: this.failedRechecks }, "sse credential recheck failed");
      if (this.failedRechecks >= MAX_FAILED_RECHECKS) this.fail(serviceUnavailable());
    } finally {
      this.rechecking = false;
    }
  }
}

/**
 * The life of one SSE request: authenticate, let the route check and load what it needs, claim an org slot, take
 * the response over, and hand the open stream to the route. After every await of set-up it checks the client is
 * still there; a client that left gets nothing wired (and whatever was already held is released).
 */
export async function serveEventStream<Prepared>(streams: OpenStreams, request: FastifyRequest, reply: FastifyReply, spec: EventStreamSpec<Prepared>): Promise<void> {
  const stream = new EventStream(request, reply, streams, spec.kind);
  try {
    const auth = await authenticate(request, reply, streams.deps);
    stream.assertClientPresent();
    stream.auth = auth;
    const prepared = await spec.prepare(auth);
    stream.assertClientPresent();
    await stream.claimSlot(auth);
    stream.assertClientPresent();
    stream.open(auth, spec.revalidate);
    await spec.start(stream, prepared);
  } catch (error) {
    const opened = reply.sent;
    stream.end();
    // Revoked while being set up, with the client still there: it gets the 401 like any other request.
    if (error instanceof ClientGone && !opened && stream.failedWith && !reply.raw.destroyed) throw stream.failedWith;
    if (!(error instanceof ClientGone) && !opened) throw error;
    if (!(error instanceof ClientGone)) streams.deps.logger.warn({ err: error, orgId: stream.orgId, kind: spec.kind }, "sse stream failed after it opened");
    // Nobody to answer: take the response from Fastify so it does not try to send one.
    if (!reply.sent) {
      reply.hijack();
      reply.raw.destroy();
    }
  }
}

/** Key hashes are compared in constant time, like every secret-derived value (e2e/reliability/timing-safe.test.ts). */
function sameHash(mine: string, theirs: string): boolean {
  const a = Buffer.from(mine);
  const b = Buffer.from(theirs);
  return a.length === b.length && timingSafeEqual(a, b);
}
