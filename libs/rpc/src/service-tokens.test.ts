import { randomBytes } from "node:crypto";
import { decodeJwt, decodeProtectedHeader, SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { ConfigError } from "@renderbus/config";
import { callersOf, newServiceKeySets } from "./service-key-sets.js";
import { devServiceTokenKeys, ed25519KeyOf, parseServiceTokenKeys, rawPublicKeyOf, serviceKeyringOf } from "./service-keys.js";
import { CallTokenError, ServiceIdentity, serviceIdentity } from "./service-tokens.js";

/** A fresh key: its `private:` seed and its `public:` key, both base64url. */
const newKey = () => {
  const seed = randomBytes(32);
  return { seed: seed.toString("base64url"), public: rawPublicKeyOf(ed25519KeyOf(seed).publicKey) };
};
const AUTH = { userId: "usr_1", orgId: "org_1", plan: "pro", role: "admin", credential: "api_key", apiKeyId: "key_1" };

describe("SERVICE_TOKEN_KEYS", () => {
  it("lists keys per service, newest first: a service's own private key, its callers' public keys", () => {
    const [g2, g1, a1] = [newKey(), newKey(), newKey()];
    const keyring = parseServiceTokenKeys(` gateway:k2:public:${g2.public}, gateway:k1:public:${g1.public} ,auth:k1:private:${a1.seed}`);
    expect(keyring.get("gateway")?.map((key) => [key.kid, key.privateKey === undefined])).toEqual([
      ["k2", true],
      ["k1", true],
    ]);
    expect(rawPublicKeyOf(keyring.get("auth")![0]!.publicKey)).toBe(a1.public);
    expect(keyring.get("auth")![0]!.privateKey).toBeDefined();
  });

  it.each([
    ["an unknown service", `billing:k1:private:${"a".repeat(43)}`, /service must be one of/],
    ["a key of the wrong length", `auth:k1:private:${"a".repeat(42)}`, /32 bytes, base64url/],
    ["a shared secret (the old HS256 form), saying what to do", `auth:k1:${"a".repeat(43)}`, /shared secrets \(service:kid:secret\) are no longer accepted; run npm run service-keys/],
    ["a half that is neither private nor public", `auth:k1:secret:${"a".repeat(43)}`, /service:kid:private:<seed> or service:kid:public:<key>/],
    ["a bad kid", `auth:k/1:private:${"a".repeat(43)}`, /kid must be/],
    ["a duplicate kid", `auth:k1:private:${"a".repeat(43)},auth:k1:public:${"b".repeat(43)}`, /listed twice/],
    ["nothing", " , ", /at least one/],
  ])("refuses %s, without echoing the key", (_case, value, message) => {
    expect(() => parseServiceTokenKeys(value)).toThrow(message);
    try {
      parseServiceTokenKeys(value);
    } catch (error) {
      expect((error as Error).message).not.toContain("a".repeat(40));
    }
  });

  it("derives the same development keys in every process when unset outside production", () => {
    const keyring = serviceKeyringOf("jobs", { MODE: "development" });
    const publicKeys = (ring: typeof keyring) => [...ring.values()].flat().map((key) => rawPublicKeyOf(key.publicKey));
    expect(publicKeys(serviceKeyringOf("jobs", { MODE: "test" }))).toEqual(publicKeys(keyring));
    expect([...keyring.keys()].sort()).toEqual(["auth", "gateway", "jobs", "webhook-dispatcher", "worker"]);
  });

  it.each([
    ["unset", undefined, /is required in production/],
    ["the development keys", devServiceTokenKeys(), /development key/],
    ["keys without the service's own private one", `jobs:k1:public:${newKey().public},gateway:k1:public:${newKey().public}`, /no private key for jobs itself/],
    ["another service's private key", `jobs:k1:private:${newKey().seed},gateway:k1:private:${newKey().seed}`, /holds the private key of gateway:k1/],
    ["malformed", "jobs:k1:private:short", /32 bytes/],
  ])("refuses to start in production with SERVICE_TOKEN_KEYS %s", (_case, value, message) => {
    const load = () => serviceKeyringOf("jobs", { MODE: "production", SERVICE_TOKEN_KEYS: value });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/SERVICE_TOKEN_KEYS/);
    expect(load).toThrow(message);
  });

  it("accepts a deployment's keys in production: each service's set from newServiceKeySets", () => {
    const sets = newServiceKeySets("2026-12");
    for (const [service, value] of Object.entries(sets)) {
      const keyring = serviceKeyringOf(service as keyof typeof sets, { MODE: "production", SERVICE_TOKEN_KEYS: value });
      expect([...keyring.keys()].sort()).toEqual([service, ...callersOf(service as keyof typeof sets)].sort());
    }
  });

  it("gives each service the public keys of the services its caller rules admit, and no one else's", () => {
    expect(callersOf("gateway")).toEqual([]);
    expect(callersOf("auth")).toEqual(["gateway", "jobs", "webhook-dispatcher", "worker"]);
    expect(callersOf("jobs")).toEqual(["gateway", "worker"]);
    expect(callersOf("webhook-dispatcher")).toEqual(["gateway"]);
    expect(callersOf("worker")).toEqual([]);
  });
});

describe("serviceIdentity", () => {
  const productionKeys = newServiceKeySets("k1");
  const problemsOf = (config: Parameters<typeof serviceIdentity>[1]) => {
    try {
      serviceIdentity("jobs", config);
      return [];
    } catch (error) {
      if (error instanceof ConfigError) return error.problems.map((problem) => problem.variable);
      throw error;
    }
  };

  it("connects in plaintext outside production when RPC_TRANSPORT is unset, and through a mesh when told so", () => {
    expect(serviceIdentity("jobs", { MODE: "development" }).transport.mode).toBe("plaintext");
    expect(serviceIdentity("jobs", { MODE: "production", SERVICE_TOKEN_KEYS: productionKeys.jobs, RPC_TRANSPORT: "mesh" }).transport.mode).toBe("mesh");
  });

  it("refuses to start a production service without tls or mesh, naming every variable at fault at once", () => {
    expect(problemsOf({ MODE: "production", SERVICE_TOKEN_KEYS: productionKeys.jobs })).toEqual(["RPC_TRANSPORT"]);
    expect(problemsOf({ MODE: "production", SERVICE_TOKEN_KEYS: productionKeys.jobs, RPC_TRANSPORT: "plaintext" })).toEqual(["RPC_TRANSPORT"]);
    expect(problemsOf({ MODE: "production" })).toEqual(["SERVICE_TOKEN_KEYS", "RPC_TRANSPORT"]);
    expect(problemsOf({ MODE: "production", SERVICE_TOKEN_KEYS: productionKeys.jobs, RPC_TRANSPORT: "tls", RPC_TLS_CA: "/nowhere/ca.pem" })).toEqual(["RPC_TLS_CERT", "RPC_TLS_KEY"]);
    expect(problemsOf({ MODE: "development", RPC_TRANSPORT: "tls", RPC_TLS_CA: "/nowhere/ca.pem", RPC_TLS_CERT: "/nowhere/tls.crt", RPC_TLS_KEY: "/nowhere/tls.key" })).toEqual(["RPC_TLS_CA", "RPC_TLS_CERT", "RPC_TLS_KEY"]);
  });
});

describe("call tokens", () => {
  const [g, w, j] = [newKey(), newKey(), newKey()];
  const gateway = serviceIdentity("gateway", { SERVICE_TOKEN_KEYS: `gateway:g1:private:${g.seed}` });
  const worker = serviceIdentity("worker", { SERVICE_TOKEN_KEYS: `worker:w1:private:${w.seed}` });
  // Jobs holds the gateway's and the worker's public keys only, as deployed.
  const jobsKeys = `jobs:j1:private:${j.seed},gateway:g1:public:${g.public},worker:w1:public:${w.public}`;
  const jobs = serviceIdentity("jobs", { SERVICE_TOKEN_KEYS: jobsKeys });
  const rejection = (token: string) => jobs.verify(token).then(() => "accepted", (error: unknown) => (error instanceof CallTokenError ? "refused" : String(error)));
  const now = () => Math.floor(Date.now() / 1000);

  it("carries the tenant: sub is the API key, org, role, plan; aud the callee, iss the caller, kid, EdDSA, at most 60 s", async () => {
    const token = await gateway.tokenFor("jobs", "/renderbus.jobs.v1.Jobs/GetJob", AUTH);
    const claims = decodeJwt(token);
    expect(decodeProtectedHeader(token)).toMatchObject({ alg: "EdDSA", kid: "g1" });
    expect(claims).toMatchObject({ iss: "gateway", aud: "jobs", sub: "key_1", org: "org_1", role: "admin", plan: "pro" });
    expect(claims.exp! - claims.iat!).toBeLessThanOrEqual(60);
    expect(await jobs.verify(token)).toEqual({ service: "gateway", auth: AUTH });
  });

  it("carries a service's own identity without a tenant", async () => {
    const token = await worker.tokenFor("jobs", "/renderbus.jobs.v1.Jobs/StartJob");
    expect(decodeJwt(token)).toMatchObject({ iss: "worker", sub: "worker", aud: "jobs" });
    expect(decodeJwt(token).org).toBeUndefined();
    expect(await jobs.verify(token)).toEqual({ service: "worker", auth: undefined });
  });

  it("cannot sign as a caller whose public key it holds", () => {
    expect(() => new ServiceIdentity("gateway", parseServiceTokenKeys(jobsKeys))).toThrow(/no private key for gateway/);
  });

  it("refuses a token for another audience, an expired one, a forged one and garbage", async () => {
    expect(await rejection(await gateway.tokenFor("auth", "/x/Y", AUTH))).toBe("refused");
    const gatewayKey = ed25519KeyOf(Buffer.from(g.seed, "base64url")).privateKey;
    const expired = await new SignJWT({ org: "org_1", plan: "pro", uid: "usr_1" })
      .setProtectedHeader({ alg: "EdDSA", kid: "g1" })
      .setIssuer("gateway")
      .setSubject("usr_1")
      .setAudience("jobs")
      .setIssuedAt(now() - 120)
      .setExpirationTime(now() - 60)
      .sign(gatewayKey);
    expect(await rejection(expired)).toBe("refused");
    const longLived = await new SignJWT({}).setProtectedHeader({ alg: "EdDSA", kid: "g1" }).setIssuer("gateway").setSubject("gateway").setAudience("jobs").setIssuedAt(now()).setExpirationTime(now() + 3600).sign(gatewayKey);
    expect(await rejection(longLived)).toBe("refused");
    const forged = await new ServiceIdentity("gateway", parseServiceTokenKeys(`gateway:g1:private:${newKey().seed}`)).tokenFor("jobs", "/x/Y", AUTH);
    expect(await rejection(forged)).toBe("refused");
    const [header, , signature] = (await worker.tokenFor("jobs", "/x/Y")).split(".");
    const claimedGateway = `${header}.${Buffer.from(JSON.stringify({ iss: "gateway", sub: "gateway", aud: "jobs", iat: now(), exp: now() + 30 })).toString("base64url")}.${signature}`;
    expect(await rejection(claimedGateway)).toBe("refused");
    expect(await rejection("not-a-jwt")).toBe("refused");
  });

  it("refuses an HS256 token keyed with the caller's public key (algorithm confusion), and unsigned ones", async () => {
    for (const secret of [Buffer.from(g.public, "base64url"), new TextEncoder().encode(g.public)]) {
      const confused = await new SignJWT({}).setProtectedHeader({ alg: "HS256", kid: "g1" }).setIssuer("gateway").setSubject("gateway").setAudience("jobs").setIssuedAt(now()).setExpirationTime(now() + 30).sign(secret);
      expect(await rejection(confused)).toBe("refused");
    }
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const unsigned = `${encode({ alg: "none", kid: "g1" })}.${encode({ iss: "gateway", sub: "gateway", aud: "jobs", iat: now(), exp: now() + 30 })}.`;
    expect(await rejection(unsigned)).toBe("refused");
  });

  it("accepts every listed key of an issuer, so a new key can roll out before the old one is dropped", async () => {
    const [oldKey, nextKey] = [newKey(), newKey()];
    const before = serviceIdentity("gateway", { SERVICE_TOKEN_KEYS: `gateway:old:private:${oldKey.seed}` });
    const after = serviceIdentity("gateway", { SERVICE_TOKEN_KEYS: `gateway:new:private:${nextKey.seed},gateway:old:private:${oldKey.seed}` });
    const verifier = serviceIdentity("jobs", { SERVICE_TOKEN_KEYS: `jobs:j1:private:${newKey().seed},gateway:new:public:${nextKey.public},gateway:old:public:${oldKey.public}` });
    expect(decodeProtectedHeader(await after.tokenFor("jobs", "/x/Y")).kid).toBe("new");
    await expect(verifier.verify(await before.tokenFor("jobs", "/x/Y"))).resolves.toMatchObject({ service: "gateway" });
    await expect(verifier.verify(await after.tokenFor("jobs", "/x/Y"))).resolves.toMatchObject({ service: "gateway" });
    const dropped = serviceIdentity("jobs", { SERVICE_TOKEN_KEYS: `jobs:j1:private:${newKey().seed},gateway:new:public:${nextKey.public}` });
    await expect(dropped.verify(await before.tokenFor("jobs", "/x/Y"))).rejects.toBeInstanceOf(CallTokenError);
  });
});
