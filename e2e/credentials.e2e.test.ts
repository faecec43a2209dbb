import { randomBytes } from "node:crypto";
import { connect, createServer, type Socket } from "node:net";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "@renderbus/config";
import { createLogger } from "@renderbus/telemetry";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { gatewayConfigSchema } from "../services/gateway/src/config.js";
import { startGatewayService, type GatewayService } from "../services/gateway/src/service.js";
import { api, createOrg, csrfTokenOf, repoRoot, signUp, waitFor } from "./helpers.js";

/** All of one org's dashboard requests together, per minute, on the system's gateway (small, to reach it). */
const DASHBOARD_ORG_CAP = 10;
/** The per-IP budget of the one gateway that tests it. */
const IP_CAP = 5;

/**
 * A TCP proxy in front of NATS that can be cut: every connection through it is dropped and new ones are refused, so
 * the gateway behind it is disconnected from NATS (and misses every core NATS message) until it is restored.
 */
async function startCuttableProxy(target: string) {
  const { hostname, port, username, password } = new URL(target);
  const sockets = new Set<Socket>();
  let open = true;
  const server = createServer((client) => {
    if (!open) return client.destroy();
    const upstream = connect(Number(port), hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => undefined);
      socket.on("close", () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return {
    // The same user as the target URL's (the test NATS server refuses anonymous clients).
    url: `nats://${username ? `${username}:${password}@` : ""}127.0.0.1:${(server.address() as { port: number }).port}`,
    /** Connections to NATS through the proxy right now (client and upstream side each count). */
    connections: () => sockets.size,
    cut: () => {
      open = false;
      for (const socket of sockets) socket.destroy();
    },
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

const sink = () => new Writable({ write: (_chunk, _encoding, done) => done() });


type Person = Awaited<ReturnType<typeof signUp>>;

/** `owner`'s org with a new person in it under `role`, acting in that org. */
async function invite(gatewayUrl: string, owner: Person, role: "admin" | "member", name: string): Promise<Person> {
  const person = await signUp(gatewayUrl, name);
  const invited = await owner.post("/auth/organization/invite-member", { email: person.email, role });
  expect(invited.status).toBe(200);
  const { id: invitationId } = (await invited.json()) as { id: string };
  expect((await person.post("/auth/organization/accept-invitation", { invitationId })).status).toBe(200);
  return person;
}

describe("credentials under attack: revocation on every replica, keys bound to membership, CSRF, per-IP and org-wide budgets", () => {
  let system: RunningSystem;
  let proxy: Awaited<ReturnType<typeof startCuttableProxy>>;
  /** A replica whose NATS connection goes through `proxy`, with a long key cache (only Redis marks can cut it short). */
  let isolated: GatewayService;
  /** A replica whose public URL is https. */
  let https: GatewayService;
  /** A replica with its own Redis namespace and a tiny per-IP budget. */
  let ipLimited: GatewayService;

  beforeAll(async () => {
    const infra = testInfra();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("credentials"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("credentials"),
      env: {
        MODE: "test",
        LOG_LEVEL: "warn",
        PLANS_JSON: JSON.stringify({ pro: { requestsPerMinute: 1000 } }),
        DASHBOARD_ORG_REQUESTS_PER_MINUTE: String(DASHBOARD_ORG_CAP),
        AUTH_SIGN_UP_PER_IP_LIMIT: "100",
      },
    });
    proxy = await startCuttableProxy(system.env.NATS_URL!);
    const replica = (env: Record<string, string>) =>
      startGatewayService(parseConfig(gatewayConfigSchema, { ...system.env, GATEWAY_PORT: "0", GATEWAY_METRICS_PORT: "0", ...env }), { logger: createLogger({ service: "gateway", level: "warn", destination: sink() }) });
    isolated = await replica({ NATS_URL: proxy.url, AUTH_CACHE_TTL_MS: "600000" });
    https = await replica({ PUBLIC_URL: "https://renderbus.example" });
    ipLimited = await replica({ NATS_NAMESPACE: `${system.env.NATS_NAMESPACE}_ip`, IP_REQUESTS_PER_MINUTE: String(IP_CAP) });
  }, 180_000);

  afterAll(async () => {
    for (const gateway of [isolated, https, ipLimited]) await gateway?.stop();
    await proxy?.close();
    await system?.stop();
  });

  describe("a replica cut off from NATS", () => {
    it("answers 401 on both replicas on the very next request once a revocation returns, though one of them missed the message", async () => {
      const { key: adminKey } = await createOrg(system.env, "pro", "Revoked");
      const created = await api(system.gatewayUrl, adminKey)("POST", "/api-keys", { name: "to revoke" });
      expect(created.status).toBe(201);
      const key: string = created.body.data.key;
      // Both replicas have the key cached (the isolated one for 10 minutes).
      for (const base of [system.gatewayUrl, isolated.url]) expect((await api(base, key)("GET", "/me")).status).toBe(200);

      proxy.cut();
      await waitFor(() => proxy.connections() === 0, { timeoutMs: 5_000, what: "the isolated replica to lose NATS" });
      // Used again just before the revocation: the isolated replica has just read the key's marks and would serve it
      // from memory for AUTH_MARKS_RECHECK_MS (250 ms) more; the revocation answers only after that long.
      expect((await api(isolated.url, key)("GET", "/me")).status).toBe(200);
      const revoked = await api(system.gatewayUrl, adminKey)("DELETE", `/api-keys/${created.body.data.id}`);
      expect(revoked.status).toBe(200);
      expect(proxy.connections()).toBe(0); // it really could not have heard of it

      const [onSystem, onIsolated] = await Promise.all([api(system.gatewayUrl, key)("GET", "/me"), api(isolated.url, key)("GET", "/me")]);
      expect(onSystem.status).toBe(401);
      expect(onIsolated.status).toBe(401);
      expect(onIsolated.body).toEqual({ error: { code: "UNAUTHORIZED", message: "Authentication is invalid or expired" } });
      // The other key of the org is untouched on the isolated replica.
      expect((await api(isolated.url, adminKey)("GET", "/me")).status).toBe(200);
    });

    it("makes an admin's key act as a member once demoted, and refuses it once removed, on the cut-off replica too", async () => {
      const owner = await signUp(system.gatewayUrl, "Owner");
      const admin = await invite(system.gatewayUrl, owner, "admin", "Admin");
      const created = await admin.post("/api-keys", { name: "admin's key" });
      expect(created.status).toBe(201);
      const { key } = ((await created.json()) as { data: { key: string } }).data;
      const viaIsolated = api(isolated.url, key);
      expect((await viaIsolated("GET", "/me")).body.data).toMatchObject({ role: "admin" });
      expect(proxy.connections()).toBe(0); // still cut from the previous test: only Redis can tell it

      const members = (await (await fetch(`${system.gatewayUrl}/auth/organization/list-members`, { headers: { cookie: owner.cookie } })).json()) as {
        members: { id: string; user: { email: string } }[];
      };
      const memberId = members.members.find((member) => member.user.email === admin.email)!.id;
      expect((await owner.post("/auth/organization/update-member-role", { memberId, role: "member" })).status).toBe(200);
      // The key now acts with its creator's role: managing keys is refused (the cache held "admin" for 10 minutes).
      await waitFor(async () => ((await viaIsolated("GET", "/me")).body?.data?.role === "member" ? true : undefined), { timeoutMs: 10_000, what: "the demotion" });
      expect((await viaIsolated("POST", "/api-keys", { name: "no longer allowed" })).status).toBe(403);

      expect((await owner.post("/auth/organization/remove-member", { memberIdOrEmail: admin.email })).status).toBe(200);
      for (const base of [system.gatewayUrl, isolated.url]) {
        await waitFor(async () => ((await api(base, key)("GET", "/me")).status === 401 ? true : undefined), { timeoutMs: 10_000, what: "the removed member's key to be refused" });
      }
      const keys = (await (await fetch(`${system.gatewayUrl}/api-keys`, { headers: { cookie: owner.cookie } })).json()) as { data: { name: string; revokedAt: string | null }[] };
      expect(keys.data.find((entry) => entry.name === "admin's key")?.revokedAt).toBeTruthy();
    });
  });

  describe("cookie requests", () => {
    it("hands the dashboard a script-readable CSRF token and refuses cookie writes without it with 403", async () => {
      const person = await signUp(system.gatewayUrl, "Csrf");
      const first = await person.me();
      const setCookie = first.headers.getSetCookie().find((value) => value.startsWith("rb_csrf="));
      expect(setCookie).toMatch(/SameSite=Strict/);
      expect(setCookie).not.toMatch(/HttpOnly/i);
      // Holding the current token, the dashboard is not sent it again.
      const again = await fetch(`${system.gatewayUrl}/me`, { headers: { cookie: `${person.cookie}; rb_csrf=${person.token}` } });
      expect(again.headers.getSetCookie().some((value) => value.startsWith("rb_csrf="))).toBe(false);

      const write = (headers: Record<string, string>) =>
        fetch(`${system.gatewayUrl}/api-keys`, { method: "POST", headers: { cookie: person.cookie, origin: system.gatewayUrl, "content-type": "application/json", ...headers }, body: JSON.stringify({ name: "k" }) });
      const other = await signUp(system.gatewayUrl, "Other");
      const wrong: Record<string, string>[] = [{}, { "x-csrf-token": "" }, { "x-csrf-token": person.token.slice(1) }, { "x-csrf-token": other.token }];
      for (const headers of wrong) {
        const refused = await write(headers);
        expect(refused.status).toBe(403);
        expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("FORBIDDEN");
      }
      expect((await write({ "x-csrf-token": person.token })).status).toBe(201);
      // API keys need no token: no browser sends them on its own.
      const { key } = await createOrg(system.env, "pro", "Bearer");
      expect((await api(system.gatewayUrl, key)("POST", "/api-keys", { name: "k" })).status).toBe(201);
    });

    it("refuses a cookie write whose Origin is the http:// twin of an https PUBLIC_URL with 403", async () => {
      const person = await signUp(system.gatewayUrl, "Https");
      const token = await csrfTokenOf(https.url, person.cookie);
      const setCookie = (await fetch(`${https.url}/me`, { headers: { cookie: person.cookie } })).headers.getSetCookie().find((value) => value.startsWith("rb_csrf="));
      expect(setCookie).toMatch(/; Secure/);
      const write = (origin: string) =>
        fetch(`${https.url}/api-keys`, { method: "POST", headers: { cookie: person.cookie, origin, "content-type": "application/json", "x-csrf-token": token }, body: JSON.stringify({ name: "k" }) });
      expect((await write("http://renderbus.example")).status).toBe(403);
      expect((await write(`http://127.0.0.1:${https.port}`)).status).toBe(403);
      expect((await write("https://renderbus.example")).status).toBe(201);
    });

    it("caps an org's dashboard requests across its members, each still under their own budget", async () => {
      const owner = await signUp(system.gatewayUrl, "Capped");
      const member = await invite(system.gatewayUrl, owner, "member", "Teammate");
      const statuses: number[] = [];
      let limited: Response | undefined;
      // Two windows' worth at most: a window may turn over once while counting.
      for (let index = 0; index < 2 * DASHBOARD_ORG_CAP + 2 && !limited; index += 1) {
        const response = await (index % 2 === 0 ? owner : member).me();
        statuses.push(response.status);
        if (response.status === 429) limited = response;
      }
      expect(limited, `statuses: ${statuses.join(",")}`).toBeDefined();
      expect(((await limited!.json()) as { error: { code: string } }).error.code).toBe("RATE_LIMITED");
      expect(Number(limited!.headers.get("retry-after"))).toBeGreaterThan(0);
      // Neither person came near their own budget (SESSION_REQUESTS_PER_MINUTE, 600).
      expect(statuses.length).toBeLessThanOrEqual(2 * DASHBOARD_ORG_CAP + 2);
      // Another org's dashboard is unaffected.
      expect((await (await signUp(system.gatewayUrl, "Elsewhere")).me()).status).toBe(200);
    });
  });

  describe("per client address", () => {
    it("counts requests before resolving the credential: failed attempts spend the budget, then even a valid key gets 429", async () => {
      const { key } = await createOrg(system.env, "pro", "Same address");
      const bogus = () => `rb_${randomBytes(32).toString("base64url")}`;
      const statuses: number[] = [];
      let limited: { status: number; headers: Headers; body: { error: { code: string } } } | undefined;
      for (let index = 0; index < 2 * IP_CAP + 1 && !limited; index += 1) {
        const response = await api(ipLimited.url, bogus())("GET", "/me");
        statuses.push(response.status);
        if (response.status === 429) limited = response;
      }
      expect(statuses).toContain(401);
      expect(limited, `statuses: ${statuses.join(",")}`).toBeDefined();
      expect(limited!.body.error.code).toBe("RATE_LIMITED");
      expect(Number(limited!.headers.get("retry-after"))).toBeGreaterThan(0);
      expect((await api(ipLimited.url, key)("GET", "/me")).status).toBe(429);
      expect((await fetch(`${ipLimited.url}/me`)).status).toBe(429);
    });
  });
});
