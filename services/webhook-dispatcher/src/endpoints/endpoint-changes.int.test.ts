import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { createDatabase, migrateToLatest, type Database, type NotificationListener } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import { loadPlans } from "@renderbus/plans";
import { createSecretBox } from "@renderbus/secret-box";
import { createLogger } from "@renderbus/telemetry";
import { createTestDatabase } from "@renderbus/testing";
import { migrations } from "../../migrations/index.js";
import { DISPATCHER_SCHEMA, type DispatcherTables } from "../database.js";
import type { WebhookTargets } from "../targets/webhook-targets.js";
import { ENDPOINTS_CHANGED_CHANNEL, followEndpointChanges } from "./endpoint-changes.js";
import { createEndpointDirectory, type EndpointDirectory } from "./endpoint-directory.js";
import { deleteEndpoint, insertEndpoint, updateEndpoint } from "./endpoint-store.js";

/** Long enough that nothing in this file is read again because an entry expired. */
const TTL_MS = 10 * 60_000;

let url: string;
let database: Database<DispatcherTables>;
let admin: pg.Client;
const box = createSecretBox(randomBytes(32));
const closers: Array<() => Promise<unknown>> = [];

/** The auth service's side: every org is on the pro plan with a webhookUrl. */
function fakeTargets(): WebhookTargets {
  const pro = loadPlans().pro;
  return {
    get: async (orgId: string) => ({ orgId, plan: pro, url: "https://hooks.example.com/default", secret: "org-secret" }),
    forget: () => undefined,
    forgetAll: () => undefined,
  };
}

/** A replica's directory, following changes as the service wires it. */
async function replica(): Promise<{ directory: EndpointDirectory; listener: NotificationListener }> {
  const directory = createEndpointDirectory(database.db, fakeTargets(), box, { ttlMs: TTL_MS });
  const listener = await followEndpointChanges({ databaseUrl: url, directory, logger: createLogger({ service: "endpoint-changes-test", level: "silent" }) });
  closers.push(() => listener.stop());
  return { directory, listener };
}

async function eventually<T>(read: () => Promise<T>, check: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > deadline) throw new Error(`not seen in time: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const urlsOf = (directory: EndpointDirectory, orgId: string) => directory.get(orgId).then((org) => org.endpoints.map((endpoint) => `${endpoint.url} ${endpoint.enabled ? "on" : "off"}`));

async function createEndpoint(orgId: string, endpointUrl: string) {
  const row = await insertEndpoint(
    database.db,
    orgId,
    { url: endpointUrl, description: "", events: ["*"], enabled: true, ordering: "none", rateLimitPerSecond: null, retrySchedule: "seed", secret: "whsec_test" },
    box,
    { max: 20, defaultCounts: true },
  );
  return row!;
}

beforeAll(async () => {
  url = await createTestDatabase("endpointchanges");
  database = createDatabase<DispatcherTables>({ url, schema: DISPATCHER_SCHEMA, maxConnections: 2 });
  await migrateToLatest(database.db, DISPATCHER_SCHEMA, migrations);
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
});

afterAll(async () => {
  for (const close of closers) await close().catch(() => undefined);
  await admin?.end();
  await database?.close();
});

describe("endpoint changes across replicas", () => {
  it("reach a replica that cached the org as they commit, whichever replica (or SQL) made them", async () => {
    const orgId = newId("org");
    const { directory } = await replica();
    expect(await urlsOf(directory, orgId)).toEqual(["https://hooks.example.com/default on"]);

    // Written elsewhere (another replica's RPC, the store's functions on their own connection): created, disabled, deleted.
    const row = await createEndpoint(orgId, "https://hooks.example.com/new");
    await eventually(() => urlsOf(directory, orgId), (urls) => urls.includes("https://hooks.example.com/new on"));
    await updateEndpoint(database.db, orgId, row.id, { enabled: false, disabled_reason: "manual", disabled_at: Date.now() });
    await eventually(() => urlsOf(directory, orgId), (urls) => urls.includes("https://hooks.example.com/new off"));
    await deleteEndpoint(database.db, orgId, row.id);
    await eventually(() => urlsOf(directory, orgId), (urls) => urls.length === 1);

    // An operator's SQL notifies too (a trigger, not the store's code).
    await createEndpoint(orgId, "https://hooks.example.com/sql");
    await eventually(() => urlsOf(directory, orgId), (urls) => urls.length === 2);
    await admin.query(`update ${DISPATCHER_SCHEMA}.endpoints set url = 'https://hooks.example.com/by-hand' where org_id = $1 and url is not null`, [orgId]);
    await eventually(() => urlsOf(directory, orgId), (urls) => urls.includes("https://hooks.example.com/by-hand on"));
  });

  it("are all assumed after the replica's LISTEN connection was lost: it forgets every org", async () => {
    const orgId = newId("org");
    const { directory, listener } = await replica();
    // Cached first, so that the creation's own notice is the one waited for below (not one still on its way).
    await urlsOf(directory, orgId);
    await createEndpoint(orgId, "https://hooks.example.com/before");
    await eventually(() => urlsOf(directory, orgId), (urls) => urls.length === 2);

    // A change no one is told about (triggers off for this session, as during a logical restore): the cache keeps
    // serving what it had, which is what the TTL alone would do for ten minutes.
    await admin.query("set session_replication_role = replica");
    await admin.query(`update ${DISPATCHER_SCHEMA}.endpoints set url = 'https://hooks.example.com/unannounced' where org_id = $1 and url is not null`, [orgId]);
    await admin.query("set session_replication_role = origin");
    // Nor does a stray notice on the channel (empty, or another org's) make it read this org again.
    await admin.query(`notify ${ENDPOINTS_CHANGED_CHANNEL}`);
    await admin.query(`select pg_notify('${ENDPOINTS_CHANGED_CHANNEL}', 'org_someone_else')`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await urlsOf(directory, orgId)).toContain("https://hooks.example.com/before on");

    // The connection is lost (a database restart, a failover): once listening again, the replica reads everything anew.
    const { rows } = await admin.query<{ ended: boolean }>("select pg_terminate_backend(pid) as ended from pg_stat_activity where datname = current_database() and query = $1", [
      `listen ${ENDPOINTS_CHANGED_CHANNEL}`,
    ]);
    expect(rows.length).toBeGreaterThan(0);
    await eventually(() => urlsOf(directory, orgId), (urls) => urls.includes("https://hooks.example.com/unannounced on"));
    expect(listener.listening).toBe(true);
  });
});
