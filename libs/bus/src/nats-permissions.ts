import { createHmac } from "node:crypto";
import { DISPATCH_DURABLE, STREAMS, type StreamSpec } from "./streams.js";

/**
 * Who may publish and subscribe what on NATS: one user per service, each allowed only the subjects it owns or
 * consumes (SECURITY-AUDIT finding 2). This table is the single source of the permissions: the nats-server config of
 * `npm test` / `npm start` (libs/testing/src/local-nats.ts), the chaos rig, deploy/nats/nats.yaml and
 * docker-compose's deploy/nats/nats-compose.conf are generated from it (deploy/manifests.test.ts fails when a
 * checked-in file differs), and docs/events.md's permission column says the same in words.
 */

/** The NATS users: one per service, plus the example subscriber's read-only one. */
export const NATS_USERS = ["auth", "jobs", "webhook-dispatcher", "worker", "gateway", "job-subscriber"] as const;
export type NatsUser = (typeof NATS_USERS)[number];

/** What one user does on NATS, in logical subjects (before any namespace) and streams. */
export interface NatsGrant {
  /** Streams it declares at start-up (`Bus.ensureStreams`): may create, update and read their info. */
  declares: StreamSpec[];
  /** Streams whose durables it creates and pulls from (and acks). */
  consumes: StreamSpec[];
  /**
   * Streams it reads only some subjects of: its durables must filter on one of them (`CONSUMER.CREATE.<stream>.
   * <durable>.<filter>`, the only form allowed), so the rest of the stream stays unread.
   */
  consumesSubjects?: { stream: StreamSpec; subjects: string[] }[];
  /** Streams whose durables it may delete (`bus.consume({replaces})` retires an old layout). */
  retiresConsumers?: StreamSpec[];
  /** Streams whose stored messages it reads by subject and purges (the worker's crash ledger). */
  readsAndPurges?: StreamSpec[];
  /** Streams whose stored messages it reads by subject (the jobs service: is a job's dispatch still queued?). */
  readsMessages?: StreamSpec[];
  /**
   * Another user's durables whose consumer info it reads, and nothing else of them (the jobs service: how far the
   * workers' durable has delivered the dispatch stream).
   */
  readsConsumerInfo?: { stream: StreamSpec; durable: string }[];
  /** Subjects it publishes, to JetStream (outbox relay, crash ledger) or as core NATS notifications. */
  publishes: string[];
  /** Core NATS subscriptions (revocations, SSE fan-out, cancel signals). */
  listens: string[];
}

/**
 * The permission matrix. Nobody may delete a stream, read another service's replies or publish another service's
 * events; nobody consumes JetStream advisories (`$JS.EVENT.ADVISORY.>`), so nobody may subscribe to them.
 */
export const NATS_GRANTS: Record<NatsUser, NatsGrant> = {
  // Outbox of auth events; charges credits on job outcomes; emails admins about endpoints the dispatcher disabled.
  auth: {
    declares: [STREAMS.authEvents, STREAMS.jobEvents, STREAMS.webhookEvents],
    consumes: [STREAMS.jobEvents],
    consumesSubjects: [{ stream: STREAMS.webhookEvents, subjects: ["webhooks.events.endpoint.disabled"] }],
    retiresConsumers: [STREAMS.jobEvents],
    publishes: ["auth.events.>"],
    listens: [],
  },
  // Outbox of job events and dispatches; keeps each job's delivery log and each org's current plan; tells a dispatch
  // queued for a free worker from one delivered or gone (its dispatched timeout).
  jobs: {
    declares: [STREAMS.jobEvents, STREAMS.jobDispatch, STREAMS.webhookEvents, STREAMS.authEvents],
    consumes: [],
    consumesSubjects: [
      { stream: STREAMS.webhookEvents, subjects: ["webhooks.events.deliveries.updated", "webhooks.events.delivery.updated"] },
      { stream: STREAMS.authEvents, subjects: ["auth.events.org.updated"] },
    ],
    readsMessages: [STREAMS.jobDispatch],
    readsConsumerInfo: [{ stream: STREAMS.jobDispatch, durable: DISPATCH_DURABLE }],
    publishes: ["jobs.events.>", "jobs.dispatch.>"],
    listens: [],
  },
  // Turns job events into webhook deliveries; drops cached webhook targets on org changes; turns live progress into
  // opt-in `job.progress` deliveries (a queue group: each message reaches one replica).
  "webhook-dispatcher": {
    declares: [STREAMS.jobEvents, STREAMS.webhookEvents],
    consumes: [STREAMS.jobEvents],
    retiresConsumers: [STREAMS.jobEvents],
    publishes: ["webhooks.events.>"],
    listens: ["auth.events.org.updated", "jobs.progress.*.*"],
  },
  // Pulls dispatches, records attempts (crash ledger), stops a job's provider on its cancel event. It reports
  // progress over gRPC only: it may not publish job events. Live progress (jobs.progress.<org>.<job>) is a core NATS
  // message outside every stream.
  worker: {
    declares: [STREAMS.jobDispatch, { name: "WORKER_ATTEMPTS", subjects: ["worker.attempts.>"] }],
    consumes: [STREAMS.jobDispatch],
    readsAndPurges: [{ name: "WORKER_ATTEMPTS", subjects: ["worker.attempts.>"] }],
    publishes: ["worker.attempts.>", "jobs.progress.*.*"],
    listens: ["jobs.events.job.cancelled"],
  },
  // Core NATS only: cache invalidation and the SSE streams. No JetStream administration at all.
  gateway: {
    declares: [],
    consumes: [],
    publishes: ["gateway.notify.api_key.revoked"],
    listens: [
      "auth.events.api_key.revoked",
      "auth.events.org.updated",
      "gateway.notify.api_key.revoked",
      "jobs.events.job.*",
      "jobs.progress.*.*",
      "webhooks.events.deliveries.updated",
      // Lone updates from dispatchers older than DeliveriesUpdated (a rolling upgrade); drop once none can remain.
      "webhooks.events.delivery.updated",
      "webhooks.events.batch.completed",
    ],
  },
  // examples/job-subscriber: reads job events through its own durable; publishes nothing.
  "job-subscriber": {
    declares: [],
    consumes: [STREAMS.jobEvents],
    publishes: [],
    listens: [],
  },
};

/**
 * The inbox prefix of a user's request/reply subjects. Each user has its own (`_INBOX_worker.<id>`), so no service can
 * subscribe to another's JetStream API answers or publish acknowledgements.
 */
export function natsInboxPrefix(user: string): string {
  return `_INBOX_${user}`;
}

/** Publish and subscribe allow-lists of one user, in wire subjects. */
export interface NatsPermissions {
  publish: string[];
  subscribe: string[];
}

/**
 * Which subject namespaces the permissions cover: `""` is production (no prefix); a concrete namespace covers
 * `<ns>.jobs.events.>` and `<ns>_JOBS_EVENTS`; `"*"` covers any one namespace (tests make a new one per file, so
 * their server cannot know them in advance). With `"*"` a stream name cannot be matched by prefix, so JetStream API
 * subjects of namespaced streams match any stream (`$JS.API.STREAM.INFO.*`): subjects stay exact, stream rights widen.
 */
export type NatsNamespaces = string[];

/** Production: no namespace. */
export const PRODUCTION_NAMESPACES: NatsNamespaces = [""];
/** Test and local servers: production subjects and any one-token namespace. */
export const ANY_NAMESPACE: NatsNamespaces = ["", "*"];

/** The allow-lists of `user` for the given namespaces. */
export function natsPermissions(user: NatsUser, namespaces: NatsNamespaces = PRODUCTION_NAMESPACES): NatsPermissions {
  const grant = NATS_GRANTS[user];
  const publish = new Set<string>();
  const subscribe = new Set<string>([`${natsInboxPrefix(user)}.>`]);
  // Bus.connect asks the JetStream account info once (jetstreamManager); every user with a stream right needs it.
  const usesJetStream = grant.declares.length + grant.consumes.length + (grant.consumesSubjects?.length ?? 0) > 0 || grant.publishes.length > 0;
  if (usesJetStream) publish.add("$JS.API.INFO");
  for (const namespace of namespaces) {
    const subject = (logical: string) => (namespace ? `${namespace}.${logical}` : logical);
    const stream = (spec: StreamSpec) => (namespace === "*" ? "*" : namespace ? `${namespace}_${spec.name}` : spec.name);
    for (const spec of grant.declares) {
      for (const action of ["CREATE", "UPDATE", "INFO"]) publish.add(`$JS.API.STREAM.${action}.${stream(spec)}`);
    }
    for (const spec of grant.consumes) {
      publish.add(`$JS.API.STREAM.INFO.${stream(spec)}`);
      // CREATE.<stream>.<durable>[.<filter subject>] (nats-server 2.9 API), DURABLE.CREATE for older servers.
      publish.add(`$JS.API.CONSUMER.CREATE.${stream(spec)}.>`);
      publish.add(`$JS.API.CONSUMER.DURABLE.CREATE.${stream(spec)}.*`);
      publish.add(`$JS.API.CONSUMER.INFO.${stream(spec)}.*`);
      publish.add(`$JS.API.CONSUMER.MSG.NEXT.${stream(spec)}.*`);
      publish.add(`$JS.ACK.${stream(spec)}.>`);
    }
    for (const { stream: spec, subjects } of grant.consumesSubjects ?? []) {
      publish.add(`$JS.API.STREAM.INFO.${stream(spec)}`);
      for (const logical of subjects) publish.add(`$JS.API.CONSUMER.CREATE.${stream(spec)}.*.${subject(logical)}`);
      publish.add(`$JS.API.CONSUMER.INFO.${stream(spec)}.*`);
      publish.add(`$JS.API.CONSUMER.MSG.NEXT.${stream(spec)}.*`);
      publish.add(`$JS.ACK.${stream(spec)}.>`);
    }
    for (const spec of grant.retiresConsumers ?? []) publish.add(`$JS.API.CONSUMER.DELETE.${stream(spec)}.*`);
    for (const spec of [...(grant.readsAndPurges ?? []), ...(grant.readsMessages ?? [])]) {
      publish.add(`$JS.API.STREAM.MSG.GET.${stream(spec)}`);
      publish.add(`$JS.API.DIRECT.GET.${stream(spec)}`);
    }
    for (const spec of grant.readsAndPurges ?? []) publish.add(`$JS.API.STREAM.PURGE.${stream(spec)}`);
    for (const { stream: spec, durable } of grant.readsConsumerInfo ?? []) publish.add(`$JS.API.CONSUMER.INFO.${stream(spec)}.${durable}`);
    for (const logical of grant.publishes) publish.add(subject(logical));
    for (const logical of grant.listens) subscribe.add(subject(logical));
  }
  return { publish: [...publish], subscribe: [...subscribe] };
}

/** A user's password, or a reference the server resolves from its environment (`$NATS_PASSWORD_GATEWAY`). */
export type NatsPasswordSource = (user: NatsUser) => string;

/** The environment variable deploy configs read each user's password from: `NATS_PASSWORD_WEBHOOK_DISPATCHER`. */
export function natsPasswordVariable(user: string): string {
  return `NATS_PASSWORD_${user.toUpperCase().replaceAll("-", "_")}`;
}

/** Passwords taken by the server from its environment (deploy configs: Kubernetes Secret, compose variables). */
export const passwordsFromEnvironment: NatsPasswordSource = (user) => `$${natsPasswordVariable(user)}`;

/** Options of {@link natsAuthorizationBlock}. */
export interface NatsAuthorizationOptions {
  passwords: NatsPasswordSource;
  namespaces?: NatsNamespaces;
  /**
   * An extra user allowed everything (test harnesses that publish events and inspect streams as any service would).
   * Only local test and development servers have one; deploy configs never do.
   */
  superuser?: { user: string; password: string };
}

/** The nats-server config `authorization { users = [...] }` block for every user of {@link NATS_GRANTS}. */
export function natsAuthorizationBlock(options: NatsAuthorizationOptions): string {
  const quote = (value: string) => (value.startsWith("$") ? value : JSON.stringify(value));
  const list = (subjects: string[]) => subjects.map((subject) => `          ${JSON.stringify(subject)}`).join("\n");
  const users = NATS_USERS.map((user) => {
    const permissions = natsPermissions(user, options.namespaces);
    return [
      "    {",
      `      user: ${JSON.stringify(user)}`,
      `      password: ${quote(options.passwords(user))}`,
      "      permissions: {",
      `        publish: { allow: [\n${list(permissions.publish)}\n        ] }`,
      `        subscribe: { allow: [\n${list(permissions.subscribe)}\n        ] }`,
      "      }",
      "    }",
    ].join("\n");
  });
  if (options.superuser) {
    users.push(`    { user: ${JSON.stringify(options.superuser.user)}, password: ${quote(options.superuser.password)} }`);
  }
  return `authorization {\n  users = [\n${users.join("\n")}\n  ]\n}\n`;
}

/** The user test harnesses connect as on local servers (see {@link NatsAuthorizationOptions.superuser}). */
export const DEV_SUPERUSER = "renderbus-dev";

/**
 * The fixed seed local servers derive their passwords from (`npm start`, `npm test`, the chaos rig) unless
 * `RENDERBUS_NATS_DEV_SEED` sets another: they listen on 127.0.0.1 only, and a fixed seed lets a later run reuse a
 * server an earlier one left running. Production passwords never come from it.
 */
export const DEV_NATS_SEED = "renderbus-local-nats";

/** The local (dev/test) password of `user`: HMAC of the user name under the dev seed. */
export function devNatsPassword(user: string, seed: string = process.env.RENDERBUS_NATS_DEV_SEED || DEV_NATS_SEED): string {
  return createHmac("sha256", seed).update(user).digest("base64url");
}

/** Where the deploy configs' generated users live (included by deploy/nats/nats.yaml and deploy/nats/compose.conf). */
export const DEPLOY_AUTHORIZATION_FILE = "deploy/nats/authorization.conf";

/**
 * The content of {@link DEPLOY_AUTHORIZATION_FILE}: every user with its production permissions, passwords read by
 * nats-server from its environment (`NATS_PASSWORD_<USER>`, from the `nats-users` Secret or compose variables).
 * Written by `npm run nats:config`; deploy/manifests.test.ts fails when the checked-in file differs.
 */
export function deployNatsAuthorization(): string {
  return [
    "# Generated from libs/bus/src/nats-permissions.ts by `npm run nats:config`: do not edit by hand.",
    "# One user per service with only the subjects it owns or consumes (docs/events.md, \"Permissions\"); each password",
    "# comes from the server's environment (NATS_PASSWORD_<USER>).",
    natsAuthorizationBlock({ passwords: passwordsFromEnvironment, namespaces: PRODUCTION_NAMESPACES }),
  ].join("\n");
}
