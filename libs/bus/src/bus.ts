import { connect } from "@nats-io/transport-node";
import { headers as natsHeaders, type NatsConnection, type MsgHdrs } from "@nats-io/nats-core";
import { whenJetStreamAnswers } from "./jetstream-start-up.js";
import {
  AckPolicy,
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type Consumer,
  type ConsumerConfig,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type PubAck,
  type StoredMsg,
} from "@nats-io/jetstream";
import { SpanKind, context as otelContext } from "@opentelemetry/api";
import { contextFromTraceHeaders, currentTraceHeaders, tracer, type Logger } from "@renderbus/telemetry";
import { natsConnectionOptions, natsCredentialsFromEnv, splitNatsUrl, type NatsCredentials } from "./nats-credentials.js";
import { nanos, streamConfig, type StreamSpec } from "./streams.js";
import { TasksInFlight } from "./tasks-in-flight.js";

export interface BusOptions {
  url: string;
  /** Connection name shown in NATS monitoring. */
  name: string;
  /**
   * Prefix for every subject and stream name. Empty in production; tests give each file its own namespace so they
   * can share one server.
   */
  namespace?: string;
  /** Stream replicas (3 on a JetStream cluster). */
  replicas?: number;
  logger?: Logger;
  /**
   * User, password or creds file, TLS files. Default: a user and password in `url`, else the environment
   * (`NATS_USER`, `NATS_PASSWORD`, `NATS_CREDS`, `NATS_TLS_*`; see nats-credentials.ts). With `MODE=production` in
   * the environment, connecting without any throws MissingNatsCredentialsError.
   */
  credentials?: NatsCredentials;
}


/**
 * How long one pull request waits on the server before the client sends the next. The library's default (30 s)
 * means that after a stream's leader changes (a NATS node lost or partitioned), a pull the old leader held is noticed
 * dead only when it expires: consumers stalled 12-30 s in the chaos runs. 5 s bounds that stall at the cost of one
 * small request per consumer every 5 s when idle.
 */
export const CONSUME_PULL_EXPIRES_MS = 5_000;

/** A message as handed to consumer handlers: subject without the namespace, parsed JSON body, flat headers. */
export interface BusMessage<T = unknown> {
  subject: string;
  data: T;
  headers: Record<string, string>;
  /** The `Nats-Msg-Id` the publisher set (the event id for outbox-published events). */
  msgId: string;
  /** 1 on the first delivery. */
  deliveryCount: number;
  streamSequence: number;
  /** Extends the ack deadline while a long task is still running. */
  working(): void;
}

/** What a handler decides for a message. Returning nothing acks it; throwing naks it with the default delay. */
export type HandlerOutcome = void | { nakDelayMs: number } | { term: true };

export interface ConsumeOptions<T> {
  stream: StreamSpec;
  /**
   * Durable consumer name: replicas using the same name share its messages. With several `filterSubjects`, each
   * subject gets its own durable named after this one (see `Bus.consume`).
   */
  durable: string;
  /** Subjects taken (logical, wildcards allowed); none takes the whole stream. */
  filterSubjects?: string[];
  /**
   * Durables of an earlier consumer layout this one takes over: new durables start at the first message none of them
   * had acknowledged, and they are deleted once the new ones exist. Handlers are idempotent, so messages the old
   * durables had delivered but not yet acknowledged (or acknowledged out of order) are simply seen again.
   */
  replaces?: string[];
  ackWaitMs?: number;
  maxAckPending?: number;
  maxDeliver?: number;
  /** Where a new durable starts; `new` skips history (default `all`). */
  deliverPolicy?: "all" | "new";
  /** Delay before redelivery after a handler throws. */
  retryDelayMs?: number;
  /** How many messages are processed at once by this process. */
  concurrency?: number;
  /**
   * Must be idempotent: a message is acked without waiting for the server's confirmation, so a lost ack (or a crash
   * before it) hands the same message to a handler again.
   */
  handler: (message: BusMessage<T>) => Promise<HandlerOutcome>;
}

export interface ConsumerHandle {
  /** Stops fetching, waits for in-flight handlers; unfinished messages are not acked (they will be redelivered). */
  stop(): Promise<void>;
}

export interface PublishOptions {
  msgId?: string;
  headers?: Record<string, string>;
}

/** First wait before a failed consume loop opens its iterator again; doubles on each failure in a row. */
export const CONSUME_RETRY_MIN_MS = 250;
/** Longest wait between two attempts of a failed consume loop. */
export const CONSUME_RETRY_MAX_MS = 30_000;

/** JetStream access for one process: declared streams, publishing with dedup ids, durable consumers. */
export class Bus {
  private readonly consumers = new Set<ConsumerHandle>();
  /** Each consume loop's state: false between a failure of its iterator and its recovery. */
  private readonly readyLoops = new Map<symbol, boolean>();
  private readonly readinessListeners = new Set<(ready: boolean) => void>();
  private lastReadiness = true;
  private readonly reconnectListeners = new Set<() => void>();
  private watchingStatus = false;

  private constructor(
    readonly nc: NatsConnection,
    readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
    private readonly options: BusOptions,
  ) {}

  static async connect(options: BusOptions): Promise<Bus> {
    // noAsyncTraces: without it every request, and so every JetStream publish, builds two Error objects (stack
    // captures) in case it fails; they were ~4% of the dispatcher's CPU under load. A failed publish still rejects
    // with its cause; only the caller's async stack is missing from it.
    const { url, credentials: fromUrl } = splitNatsUrl(options.url);
    const fromEnv = natsCredentialsFromEnv();
    const credentials = options.credentials ?? (fromUrl ? { ...fromEnv, ...fromUrl } : fromEnv);
    const auth = natsConnectionOptions(url, credentials, process.env.MODE === "production");
    const nc = await connect({ servers: url, name: options.name, maxReconnectAttempts: -1, reconnectTimeWait: 500, noAsyncTraces: true, ...auth });
    const jsm = await whenJetStreamAnswers("connecting to JetStream", () => jetstreamManager(nc), { logger: options.logger }).catch(async (error: unknown) => {
      await nc.close().catch(() => undefined);
      throw error;
    });
    return new Bus(nc, jetstream(nc), jsm, options);
  }

  /** The wire subject for a logical subject (adds the namespace). */
  subject(logical: string): string {
    return this.options.namespace ? `${this.options.namespace}.${logical}` : logical;
  }

  /** The logical subject of a wire subject (drops the namespace). */
  logicalSubject(wire: string): string {
    const prefix = this.options.namespace ? `${this.options.namespace}.` : "";
    return prefix && wire.startsWith(prefix) ? wire.slice(prefix.length) : wire;
  }

  streamName(spec: StreamSpec): string {
    return this.options.namespace ? `${this.options.namespace}_${spec.name}` : spec.name;
  }

  /** The last stored message on a logical subject of `spec`'s stream, or null when there is none (a direct read). */
  async lastMessage(spec: StreamSpec, logicalSubject: string): Promise<StoredMsg | null> {
    return this.jsm.streams.getMessage(this.streamName(spec), { last_by_subj: this.subject(logicalSubject) }).catch((error: unknown) => {
      if (/no message found/i.test(String(error))) return null;
      throw error;
    });
  }

  /**
   * Creates or updates the streams; safe to call from every replica at start-up. While JetStream does not answer yet
   * (a cluster forming), it tries again for up to JETSTREAM_START_UP_RETRY_MS.
   */
  async ensureStreams(specs: StreamSpec[]): Promise<void> {
    for (const spec of specs) {
      await whenJetStreamAnswers(`declaring stream ${spec.name}`, () => this.ensureStream(spec), { logger: this.options.logger });
    }
  }

  private async ensureStream(spec: StreamSpec): Promise<void> {
    const config = streamConfig(spec, this.streamName(spec), spec.subjects.map((s) => this.subject(s)), this.options.replicas ?? 1);
    try {
      await this.jsm.streams.info(config.name);
      await this.jsm.streams.update(config.name, config);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      try {
        await this.jsm.streams.add(config);
      } catch (addError) {
        // Another replica created it between our info and add.
        if (!String(addError).includes("already in use")) throw addError;
      }
    }
  }

  /**
   * Publishes a JSON body. With `msgId`, JetStream drops a repeat inside the stream's duplicate window, which is what
   * makes the outbox relay's at-least-once publishing land exactly once. Trace context of the caller is injected.
   */
  publish(logicalSubject: string, body: unknown, options: PublishOptions = {}): Promise<PubAck> {
    const headers = natsHeaders();
    const traceHeaders = { ...currentTraceHeaders(), ...options.headers };
    for (const [name, value] of Object.entries(traceHeaders)) headers.set(name, value);
    const payload = typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body);
    return this.js.publish(this.subject(logicalSubject), payload, {
      headers,
      ...(options.msgId ? { msgID: options.msgId } : {}),
    });
  }

  /** Core NATS publish (no persistence): for fan-out notifications where a missed message is harmless. */
  notify(logicalSubject: string, body: unknown): void {
    this.nc.publish(this.subject(logicalSubject), JSON.stringify(body));
  }

  /**
   * Calls `listener` each time the connection is back after a loss; returns a function that removes it. Core
   * subscriptions ({@link Bus.listen}) are re-established by then, but what was published during the gap never
   * arrives: a cache kept fresh by such notices drops its entries here.
   */
  onReconnect(listener: () => void): () => void {
    if (!this.watchingStatus) {
      this.watchingStatus = true;
      void (async () => {
        for await (const status of this.nc.status()) {
          if (status.type !== "reconnect") continue;
          for (const each of [...this.reconnectListeners]) {
            try {
              each();
            } catch (error) {
              this.options.logger?.error({ err: error }, "reconnect listener failed");
            }
          }
        }
      })().catch(() => undefined);
    }
    this.reconnectListeners.add(listener);
    return () => this.reconnectListeners.delete(listener);
  }

  /**
   * Core NATS subscription to a logical subject; returns an unsubscribe function. With `queue`, the subscribers of
   * that queue group (a service's replicas) share the messages: each one goes to only one of them. `onSubscribed`
   * runs once the server has the subscription (not at all if the connection fails first).
   */
  listen<T>(logicalSubject: string, handler: (data: T, subject: string) => void, options: { queue?: string; onSubscribed?: () => void } = {}): () => void {
    const subscription = this.nc.subscribe(this.subject(logicalSubject), {
      ...(options.queue ? { queue: options.queue } : {}),
      callback: (error, msg) => {
        if (error) return;
        try {
          handler(msg.json<T>(), this.logicalSubject(msg.subject));
        } catch (handlerError) {
          this.options.logger?.error({ err: handlerError, subject: msg.subject }, "notification handler failed");
        }
      },
    });
    // A flush's reply comes after the server has processed the SUB: every message published from then on arrives.
    if (options.onSubscribed) {
      const onSubscribed = options.onSubscribed;
      this.nc.flush().then(onSubscribed, () => undefined);
    }
    return () => subscription.unsubscribe();
  }

  /**
   * Declares (idempotently) durable pull consumers and processes their messages until stopped.
   *
   * Several filter subjects get one durable each (`<durable>_<subject>`), not one durable with `filter_subjects`:
   * that field needs nats-server 2.10 (Debian bookworm ships 2.9), and an unfiltered durable would hand every
   * replica every event of the stream only to be acked unread (measured: the job events a service ignores cost more
   * CPU than the ones it handles). The durables share no ordering, which no handler relies on (docs/events.md).
   */
  async consume<T>(options: ConsumeOptions<T>): Promise<ConsumerHandle> {
    const stream = this.streamName(options.stream);
    const subjects = options.filterSubjects ?? [];
    const durables =
      subjects.length > 1
        ? subjects.map((subject) => ({ name: durableForSubject(options.durable, subject), subject }))
        : [{ name: options.durable, subject: subjects[0] }];
    await whenJetStreamAnswers(`declaring consumer ${options.durable}`, () => this.ensureConsumers(stream, options, durables), { logger: this.options.logger });
    // One bound on messages in flight across the durables: `concurrency` is the process's, whatever the layout.
    const inFlight = new TasksInFlight();
    const handles: ConsumerHandle[] = [];
    for (const durable of durables) handles.push(await this.consumeDurable(stream, durable, options, inFlight));
    return { stop: async () => void (await Promise.all(handles.map((handle) => handle.stop()))) };
  }

  /** Declares the durables of a consume() and deletes those they replace (idempotent: run again after a failure). */
  private async ensureConsumers<T>(stream: string, options: ConsumeOptions<T>, durables: Array<{ name: string; subject: string | undefined }>): Promise<void> {
    // Read before the new durables are ensured: a replica that finds the old ones gone also finds the new ones made.
    const startSequence = await this.firstUnackedOf(stream, (options.replaces ?? []).filter((name) => !durables.some((d) => d.name === name)));
    for (const durable of durables) await this.ensureConsumer(stream, options, durable.name, durable.subject, startSequence);
    for (const name of options.replaces ?? []) {
      if (durables.some((d) => d.name === name)) continue;
      await this.jsm.consumers.delete(stream, name).catch((error: unknown) => {
        if (!isNotFound(error)) throw error;
      });
    }
  }

  /** The first stream sequence that one of `durables` (those that still exist) has not acknowledged. */
  private async firstUnackedOf(stream: string, durables: string[]): Promise<number | undefined> {
    let first: number | undefined;
    for (const name of durables) {
      try {
        const info = await this.jsm.consumers.info(stream, name);
        const next = info.ack_floor.stream_seq + 1;
        first = first === undefined ? next : Math.min(first, next);
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
    }
    return first;
  }

  private async ensureConsumer<T>(stream: string, options: ConsumeOptions<T>, name: string, subject: string | undefined, startSequence: number | undefined): Promise<void> {
    // What an existing durable may change; where it starts is fixed at creation (JetStream refuses to change it).
    const mutable: Partial<ConsumerConfig> = {
      ack_wait: nanos(options.ackWaitMs ?? 30_000),
      max_ack_pending: options.maxAckPending ?? 1000,
      max_deliver: options.maxDeliver ?? -1,
      ...(subject ? { filter_subject: this.subject(subject) } : {}),
    };
    try {
      await this.jsm.consumers.info(stream, name);
      await this.jsm.consumers.update(stream, name, mutable);
      return;
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    const start: Partial<ConsumerConfig> =
      startSequence !== undefined
        ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: startSequence }
        : { deliver_policy: options.deliverPolicy === "new" ? DeliverPolicy.New : DeliverPolicy.All };
    await this.jsm.consumers.add(stream, { durable_name: name, ack_policy: AckPolicy.Explicit, ...start, ...mutable }).catch((addError: unknown) => {
      // Another replica created it between our info and add.
      if (!String(addError).includes("already in use") && !String(addError).includes("already exists")) throw addError;
    });
  }

  /**
   * Processes one durable's messages until stopped, under a supervisor: the JetStream iterator is opened with
   * `abort_on_missing_resource`, so a deleted consumer (an operator, a `replaces` rollout of another version) ends it
   * with an error instead of leaving it waiting forever; an iterator that throws or simply ends is logged, marks this
   * process not ready ({@link Bus.isReady}), and is opened again after a backoff (doubling up to
   * {@link CONSUME_RETRY_MAX_MS}), re-creating the durable if it is gone. A re-created durable starts where a new one
   * would (`deliverPolicy`): handlers are idempotent, so what it replays costs time, never correctness. The loop's
   * promise never rejects, so nothing here can become an unhandled rejection.
   */
  private async consumeDurable<T>(
    stream: string,
    durable: { name: string; subject: string | undefined },
    options: ConsumeOptions<T>,
    inFlight: TasksInFlight,
  ): Promise<ConsumerHandle> {
    const concurrency = options.concurrency ?? 1;
    const retryDelayMs = options.retryDelayMs ?? 1000;
    const logger = this.options.logger;
    const loopKey = Symbol(durable.name);
    let stopped = false;
    let messages: ConsumerMessages | undefined;
    let wakeUp: (() => void) | undefined;

    const handleOne = async (msg: JsMsg): Promise<void> => {
      const headerRecord = flattenHeaders(msg.headers);
      const parent = contextFromTraceHeaders(headerRecord);
      const subject = this.logicalSubject(msg.subject);
      await otelContext.with(parent, () =>
        tracer().startActiveSpan(`consume ${subject}`, { kind: SpanKind.CONSUMER }, async (span) => {
          try {
            const outcome = await options.handler({
              subject,
              data: decodeBody<T>(msg.data),
              headers: headerRecord,
              msgId: headerRecord["Nats-Msg-Id"] ?? "",
              deliveryCount: msg.info.deliveryCount,
              streamSequence: msg.seq,
              working: () => msg.working(),
            });
            if (outcome && "term" in outcome) msg.term();
            else if (outcome && "nakDelayMs" in outcome) msg.nak(outcome.nakDelayMs);
            // Fire-and-forget: waiting for the server to confirm each ack (ackAck) cost a request, its reply
            // subscription and error objects per message. A lost ack redelivers after ack_wait, which handlers
            // already survive (a crash between the work and the ack does the same).
            else msg.ack();
          } catch (error) {
            logger?.warn({ err: error, subject, deliveryCount: msg.info.deliveryCount }, "handler failed; will be redelivered");
            msg.nak(retryDelayMs);
          } finally {
            span.end();
          }
        }),
      );
    };

    /** Opens the iterator (the first time: throws to the caller, so a consumer that cannot start fails consume()). */
    const open = async (): Promise<ConsumerMessages> => {
      const consumer: Consumer = await this.js.consumers.get(stream, durable.name);
      return consumer.consume({ max_messages: Math.max(concurrency * 2, 16), expires: CONSUME_PULL_EXPIRES_MS, abort_on_missing_resource: true });
    };

    const drain = async (iterator: ConsumerMessages): Promise<void> => {
      for await (const msg of iterator) {
        inFlight.add(handleOne(msg));
        await inFlight.whileFull(concurrency);
      }
    };

    const pause = (ms: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });

    messages = await whenJetStreamAnswers(`opening consumer ${durable.name}`, open, { logger });
    this.setLoopReady(loopKey, true);
    const loop = (async () => {
      let failures = 0;
      let openedAt = Date.now();
      while (!stopped) {
        try {
          if (!messages) {
            // Gone (deleted) or never made: declare it again as consume() does, then open a new iterator.
            await this.ensureConsumer(stream, options, durable.name, durable.subject, undefined);
            messages = await open();
            if (stopped) break;
            logger?.info({ stream, durable: durable.name, failures }, "consumer resumed");
            openedAt = Date.now();
            this.setLoopReady(loopKey, true);
          }
          await drain(messages);
          if (stopped) break;
          logger?.error({ stream, durable: durable.name }, "consumer iterator ended; opening it again");
        } catch (error) {
          if (stopped) break;
          logger?.error({ err: error, stream, durable: durable.name }, "consumer failed; opening it again");
        }
        this.setLoopReady(loopKey, false);
        await messages?.close().catch(() => undefined);
        messages = undefined;
        // A loop that had worked for a while starts its backoff over.
        failures = Date.now() - openedAt > CONSUME_RETRY_MAX_MS ? 1 : failures + 1;
        openedAt = Number.POSITIVE_INFINITY;
        await pause(Math.min(CONSUME_RETRY_MIN_MS * 2 ** (failures - 1), CONSUME_RETRY_MAX_MS));
      }
      // Stopped while an iterator was being opened: that one is closed here.
      await messages?.close().catch(() => undefined);
    })().catch((error: unknown) => {
      // Unreachable in practice (every await above is guarded); kept so the promise can never reject unhandled.
      logger?.error({ err: error, stream, durable: durable.name }, "consumer supervisor stopped");
    });

    const handle: ConsumerHandle = {
      stop: async () => {
        stopped = true;
        this.consumers.delete(handle);
        wakeUp?.();
        await messages?.close().catch(() => undefined);
        await loop;
        this.readyLoops.delete(loopKey);
        this.emitReadiness();
        await inFlight.settled();
      },
    };
    this.consumers.add(handle);
    return handle;
  }

  /**
   * True while every consume loop of this process is running (none is between a failure and its recovery) and the
   * connection is not closed. Services report it through their health check (gRPC health NOT_SERVING otherwise).
   */
  isReady(): boolean {
    if (this.nc.isClosed()) return false;
    for (const ready of this.readyLoops.values()) if (!ready) return false;
    return true;
  }

  /** Calls `listener` with {@link Bus.isReady} each time it changes; returns a function that removes the listener. */
  onReadinessChange(listener: (ready: boolean) => void): () => void {
    this.readinessListeners.add(listener);
    return () => this.readinessListeners.delete(listener);
  }

  private setLoopReady(key: symbol, ready: boolean): void {
    this.readyLoops.set(key, ready);
    this.emitReadiness();
  }

  private emitReadiness(): void {
    const ready = this.isReady();
    if (ready === this.lastReadiness) return;
    this.lastReadiness = ready;
    for (const listener of this.readinessListeners) {
      try {
        listener(ready);
      } catch (error) {
        this.options.logger?.error({ err: error }, "readiness listener failed");
      }
    }
  }

  /** Stops every consumer (draining in-flight work), then drains the connection. */
  async close(): Promise<void> {
    await Promise.all([...this.consumers].map((consumer) => consumer.stop()));
    if (!this.nc.isClosed()) await this.nc.drain().catch(() => this.nc.close());
  }
}

/** `<durable>_<subject with . as _, * as any, > as all>`: JetStream durable names may not contain `.`, `*` or `>`. */
export function durableForSubject(durable: string, subject: string): string {
  return `${durable}_${subject.replaceAll(".", "_").replaceAll("*", "any").replaceAll(">", "all")}`;
}

function isNotFound(error: unknown): boolean {
  const text = String((error as Error)?.message ?? error);
  return text.includes("not found") || (error as { code?: string | number })?.code === "404";
}

const utf8 = new TextDecoder();

function decodeBody<T>(data: Uint8Array): T {
  if (data.length === 0) return undefined as T;
  const text = utf8.decode(data);
  try {
    return JSON.parse(text) as T;
  } catch {
    return text as T;
  }
}

/** Flattens NATS headers; note `MsgHdrs.get()` returns "" for a missing header, so absent keys are simply left out. */
export function flattenHeaders(headers: MsgHdrs | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers) return out;
  for (const [name, values] of headers) {
    const value = values[0];
    if (value !== undefined && value !== "") out[name] = value;
  }
  return out;
}
