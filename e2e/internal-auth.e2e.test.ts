import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import { Client, credentials, Metadata, status, type ServiceError } from "@grpc/grpc-js";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as contracts from "@renderbus/contracts";
import { allPrivateServiceKeys, callersOf, isCallerAllowed, newServiceKeySets, parseServiceTokenKeys, rpcMethodOf, SERVICE_NAMES, ServiceIdentity, type AuthContext, type CallerRule, type ServiceName } from "@renderbus/rpc";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { admin, api, createOrg, makeTestVideo, repoRoot, startFileServer, startReceiver, waitFor } from "./helpers.js";

/**
 * SECURITY-AUDIT finding 2: the internal gRPC plane trusts only call tokens. Every method of every service in
 * libs/contracts is called from outside the services, as an attacker on the network would, with no token (but the
 * old x-rb-* identity metadata), a token for another service, an expired token, a forged one, and valid tokens of
 * callers the method does not accept; nothing may change. Then a job still runs end to end.
 */

interface Method {
  path: string;
  definition: { requestSerialize(value: unknown): Buffer; requestDeserialize(value: Buffer): Record<string, unknown> };
}

/** Every unary method of every gRPC service generated into libs/contracts (a new one is covered without edits). */
function contractMethods(): Method[] {
  const methods: Method[] = [];
  for (const namespace of Object.values(contracts)) {
    for (const exported of Object.values(namespace as Record<string, unknown>)) {
      if (typeof exported !== "object" || exported === null) continue;
      for (const spec of Object.values(exported)) {
        if (spec && typeof spec === "object" && typeof (spec as { path?: unknown }).path === "string" && "requestSerialize" in spec) {
          methods.push({ path: (spec as { path: string }).path, definition: spec as Method["definition"] });
        }
      }
    }
  }
  return methods;
}

const SECRET = `whsec_${randomBytes(12).toString("hex")}`;
const SEEDS = Object.fromEntries(SERVICE_NAMES.map((service) => [service, randomBytes(32)])) as Record<ServiceName, Buffer>;
// Each service runs with its own private key and its callers' public keys (as deployed); the test holds every
// private key, to sign as any caller.
const SERVICE_KEYS = newServiceKeySets("e2e-1", SEEDS);
const keyring = parseServiceTokenKeys(allPrivateServiceKeys("e2e-1", SEEDS));
const identities = new Map(SERVICE_NAMES.map((service) => [service, new ServiceIdentity(service, keyring)]));

describe("internal gRPC calls need a valid call token of a caller the method accepts", () => {
  let system: RunningSystem;
  let media: Awaited<ReturnType<typeof startFileServer>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let hanging: Server;
  let hangingUrl: string;
  let org: { orgId: string; key: string };
  let tenant: AuthContext;
  let runningJobId: string;
  const lines: string[] = [];
  const methods = contractMethods();

  const addressOf = (audience: ServiceName) =>
    ({ auth: system.env.AUTH_GRPC_ADDRESS, jobs: system.env.JOBS_GRPC_ADDRESS, "webhook-dispatcher": system.env.WEBHOOKS_GRPC_ADDRESS })[audience as string]!;

  /** The request an attacker would send: aimed at the victim org's balance, job, keys and webhook. */
  const requestFor = (method: Method): Buffer => {
    const request = method.definition.requestDeserialize(Buffer.alloc(0));
    const aimed: Record<string, unknown> = {
      orgId: org.orgId,
      jobId: runningJobId,
      credits: 50,
      workerId: "attacker",
      keyId: "key_unknown",
      name: "attacker key",
      webhookUrl: "http://127.0.0.1:9/attacker",
      webhookSecret: "whsec_attacker_secret",
      error: { code: "PROVIDER_ERROR", message: "forged" },
    };
    for (const [field, value] of Object.entries(aimed)) if (field in request) request[field] = value;
    return method.definition.requestSerialize(request);
  };

  /** One call with exactly `metadata`; resolves with the gRPC status and the raw response. */
  const call = (method: Method, metadata: Metadata): Promise<{ code: status; response?: Buffer }> => {
    const audience = rpcMethodOf(method.path)!.audience;
    const client = new Client(addressOf(audience), credentials.createInsecure());
    return new Promise((resolve) =>
      client.makeUnaryRequest(
        method.path,
        (value: Buffer) => value,
        (value: Buffer) => value,
        requestFor(method),
        metadata,
        { deadline: new Date(Date.now() + 10_000) },
        (error: ServiceError | null, response?: Buffer) => {
          client.close();
          resolve(error ? { code: error.code } : { code: status.OK, response });
        },
      ),
    );
  };

  const bearer = (token: string) => {
    const metadata = new Metadata();
    metadata.set("authorization", `Bearer ${token}`);
    return metadata;
  };

  /** A caller the rule accepts, with the claims it would send (the gateway acting for the victim on tenant methods). */
  const allowedCaller = (rule: CallerRule): { service: ServiceName; auth?: AuthContext } =>
    rule.kind === "tenant" ? { service: "gateway", auth: tenant } : { service: rule.services[0]! };

  /** The tenant's observable state through the public API, to show refused calls changed nothing. */
  const snapshot = async () => {
    const rest = api(system.gatewayUrl, org.key);
    const [balance, job, keys, current, deliveries] = await Promise.all([
      rest("GET", "/billing/balance"),
      rest("GET", `/jobs/${runningJobId}`),
      rest("GET", "/api-keys"),
      rest("GET", "/orgs/current"),
      rest("GET", "/webhooks/deliveries"),
    ]);
    for (const response of [balance, job, keys, current, deliveries]) expect(response.status).toBe(200);
    return { balance: balance.body.data, job: job.body.data, keys: keys.body.data, org: current.body.data, deliveries: deliveries.body.data };
  };

  beforeAll(async () => {
    const infra = testInfra();
    media = await startFileServer(await makeTestVideo());
    receiver = await startReceiver();
    // An input server that never answers: keeps one job of the victim in flight while it is attacked.
    hanging = createServer(() => undefined);
    await new Promise<void>((done) => hanging.listen(0, "127.0.0.1", done));
    hangingUrl = `http://127.0.0.1:${(hanging.address() as { port: number }).port}/never.mp4`;
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("internalauth"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("internalauth"),
      // Configured keys rather than the derived development ones: the path production takes.
      env: { MODE: "test", LOG_LEVEL: "info", WEBHOOK_RETRY_SCHEDULE_MS: "200,400,800", INPUT_FETCH_TIMEOUT_MS: "600000" },
      serviceEnv: Object.fromEntries(SERVICE_NAMES.map((service) => [service, { SERVICE_TOKEN_KEYS: SERVICE_KEYS[service] }])),
      onLine: (service, line) => lines.push(`${service} ${line}`),
    });
    org = await createOrg(system.env, "starter", "Victim");
    await admin(system.env, "org:webhook", "--org", org.orgId, "--url", receiver.url, "--secret", SECRET);
    const rest = api(system.gatewayUrl, org.key);
    const keyId: string = (await rest("GET", "/api-keys")).body.data[0].id;
    const me = (await rest("GET", "/me")).body.data;
    tenant = { userId: me.userId, orgId: org.orgId, plan: me.plan, role: me.role, credential: "api_key", apiKeyId: keyId };
    const submitted = await rest("POST", "/jobs", { type: "extract.metadata", inputs: { source: hangingUrl } });
    expect(submitted.status).toBe(201);
    runningJobId = submitted.body.data.id;
    // The worker reserves the job's minimum price before it downloads (and then hangs on) the input: wait for that
    // reservation, so the snapshots compared below are both taken after it.
    const deadline = Date.now() + 60_000;
    while ((await rest("GET", "/billing/balance")).body.data.reserved < 1) {
      if (Date.now() > deadline) throw new Error("the worker never reserved the in-flight job's credits");
      await new Promise((done) => setTimeout(done, 100));
    }
  }, 180_000);

  afterAll(async () => {
    await system?.stop();
    await media?.close();
    await receiver?.close();
    hanging?.closeAllConnections();
    await new Promise((done) => hanging?.close(done));
  });

  it("finds the services' methods in libs/contracts, each with a caller rule", () => {
    expect(methods.length).toBeGreaterThanOrEqual(27);
    for (const method of methods) expect(rpcMethodOf(method.path), method.path).toBeDefined();
    expect(methods.map((method) => method.path)).toContain("/renderbus.auth.v1.Auth/GetWebhookTarget");
  });

  it("refuses every method without a token, with one for another service, expired or forged (UNAUTHENTICATED), and callers it does not accept (PERMISSION_DENIED); nothing changes", async () => {
    const before = await snapshot();
    const now = Math.floor(Date.now() / 1000);
    const outcomes: string[] = [];
    let misaddressedSample = "";
    const expectCode = (label: string, actual: status, expected: status) => {
      if (actual !== expected) outcomes.push(`${label}: ${status[actual]} instead of ${status[expected]}`);
    };

    for (const method of methods) {
      const { audience, rule } = rpcMethodOf(method.path)!;
      const allowed = allowedCaller(rule);
      const allowedKey = keyring.get(allowed.service)![0]!;

      // No token, only the identity metadata the services used to trust.
      const bare = new Metadata();
      for (const [name, value] of Object.entries({ "x-rb-user-id": tenant.userId, "x-rb-org-id": org.orgId, "x-rb-plan": "pro", "x-rb-role": "owner", "x-rb-credential": "api_key" })) bare.set(name, value);
      expectCode(`${method.path} without a token`, (await call(method, bare)).code, status.UNAUTHENTICATED);

      // A valid token of the right caller, addressed to another service.
      const otherAudience = SERVICE_NAMES.find((service) => service !== audience)!;
      const misaddressed = await identities.get(allowed.service)!.tokenFor(otherAudience, method.path, allowed.auth);
      misaddressedSample = misaddressed;
      expectCode(`${method.path} with a token for ${otherAudience}`, (await call(method, bearer(misaddressed))).code, status.UNAUTHENTICATED);

      // Signed with the right key but expired.
      const claims = allowed.auth ? { org: allowed.auth.orgId, plan: allowed.auth.plan, role: allowed.auth.role, uid: allowed.auth.userId } : {};
      const expired = await new SignJWT(claims)
        .setProtectedHeader({ alg: "EdDSA", kid: allowedKey.kid })
        .setIssuer(allowed.service)
        .setSubject(allowed.auth?.userId ?? allowed.service)
        .setAudience(audience)
        .setIssuedAt(now - 600)
        .setExpirationTime(now - 540)
        .sign(allowedKey.privateKey!);
      expectCode(`${method.path} with an expired token`, (await call(method, bearer(expired))).code, status.UNAUTHENTICATED);

      // Everything right but the key: what someone without the caller's secret can make.
      const forged = await new ServiceIdentity(allowed.service, parseServiceTokenKeys(`${allowed.service}:${allowedKey.kid}:private:${randomBytes(32).toString("base64url")}`)).tokenFor(audience, method.path, allowed.auth);
      expectCode(`${method.path} with a forged token`, (await call(method, bearer(forged))).code, status.UNAUTHENTICATED);

      // Valid tokens of every service the method does not accept, acting for the victim org: refused by the caller
      // rules when the callee knows the service's key (it calls the callee elsewhere), else not even verifiable.
      for (const service of SERVICE_NAMES) {
        const asTenant = { service, auth: tenant };
        if (isCallerAllowed(rule, asTenant)) continue;
        const token = await identities.get(service)!.tokenFor(audience, method.path, tenant);
        const known = service === audience || callersOf(audience).includes(service);
        expectCode(`${method.path} as ${service}`, (await call(method, bearer(token))).code, known ? status.PERMISSION_DENIED : status.UNAUTHENTICATED);
      }
    }

    expect(outcomes).toEqual([]);
    const after = await snapshot();
    expect(after).toEqual(before);
    expect(after.job.status).not.toMatch(/completed|failed|cancelled/);
    expect(after.balance.reserved ?? 0).toBe(before.balance.reserved ?? 0);
    expect(lines.some((line) => line.includes("rpc call refused"))).toBe(true);
    // Refusals are logged with their reason, never with a token or a key.
    const secrets = Object.values(SEEDS).map((seed) => seed.toString("base64url"));
    expect(lines.filter((line) => secrets.some((secret) => line.includes(secret)) || line.includes(misaddressedSample))).toEqual([]);
  });

  it("gives an org's webhook target (with its secret) to the dispatcher only: PERMISSION_DENIED for the gateway's and the worker's valid tokens", async () => {
    const method = methods.find((candidate) => candidate.path === "/renderbus.auth.v1.Auth/GetWebhookTarget")!;
    for (const service of ["gateway", "worker", "jobs"] as const) {
      for (const auth of [undefined, tenant]) {
        const token = await identities.get(service)!.tokenFor("auth", method.path, auth);
        const outcome = await call(method, bearer(token));
        expect(outcome.code, `${service}${auth ? " for the tenant" : ""}`).toBe(status.PERMISSION_DENIED);
        expect(outcome.response).toBeUndefined();
      }
    }
    const dispatcher = await call(method, bearer(await identities.get("webhook-dispatcher")!.tokenFor("auth", method.path)));
    expect(dispatcher.code).toBe(status.OK);
    expect(contracts.auth.WebhookTarget.decode(dispatcher.response!)).toMatchObject({ orgId: org.orgId, secret: SECRET });
  });

  it("still runs a job end to end: submitted at the gateway, run by the worker, charged, its webhook delivered", async () => {
    const rest = api(system.gatewayUrl, org.key);
    const submitted = await rest("POST", "/jobs", { type: "extract.metadata", inputs: { source: media.url("clip.mp4") } });
    expect(submitted.status).toBe(201);
    const jobId: string = submitted.body.data.id;
    const completed = await waitFor(
      () => receiver.received.find((hook) => hook.headers["x-renderbus-event"] === "job.completed" && JSON.parse(hook.rawBody.toString("utf8")).jobId === jobId),
      { timeoutMs: 60_000, what: "the job.completed webhook" },
    );
    expect(JSON.parse(completed.rawBody.toString("utf8"))).toMatchObject({ event: "job.completed", jobId, cost: { credits: expect.any(Number) } });
    const fetched = await rest("GET", `/jobs/${jobId}`);
    expect(fetched.body.data).toMatchObject({ id: jobId, status: "completed" });
  });
});
