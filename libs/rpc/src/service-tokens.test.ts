import { randomBytes } from "node:crypto";
import { decodeJwt, decodeProtectedHeader, SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { ConfigError } from "@renderbus/config";
import { devServiceTokenKeys, parseServiceTokenKeys, serviceKeyringOf } from "./service-keys.js";
import { CallTokenError, ServiceIdentity, serviceIdentity } from "./service-tokens.js";

const secret = () => randomBytes(32).toString("base64url");
const AUTH = { userId: "usr_1", orgId: "org_1", plan: "pro", role: "admin", credential: "api_key", apiKeyId: "key_1" };

describe("SERVICE_TOKEN_KEYS", () => {
  it("lists keys per service, newest first, and keeps colons inside secrets", () => {
    const keyring = parseServiceTokenKeys(` gateway:k2:${"a".repeat(32)}, gateway:k1:${"b".repeat(30)}:: ,auth:k1:${"c".repeat(40)}`);
    expect(keyring.get("gateway")?.map((key) => key.kid)).toEqual(["k2", "k1"]);
    expect(new TextDecoder().decode(keyring.get("gateway")![1]!.secret)).toBe(`${"b".repeat(30)}::`);
    expect(keyring.get("auth")).toHaveLength(1);
  });

  it.each([
    ["an unknown service", `billing:k1:${"a".repeat(32)}`, /service must be one of/],
    ["a short secret", "auth:k1:short", /at least 32 characters/],
    ["a bad kid", `auth:k/1:${"a".repeat(32)}`, /kid must be/],
    ["a duplicate kid", `auth:k1:${"a".repeat(32)},auth:k1:${"b".repeat(32)}`, /listed twice/],
    ["nothing", " , ", /at least one/],
  ])("refuses %s, without echoing the secret", (_case, value, message) => {
    expect(() => parseServiceTokenKeys(value)).toThrow(message);
    try {
      parseServiceTokenKeys(value);
    } catch (error) {
      expect((error as Error).message).not.toContain("a".repeat(32));
    }
  });

  it("derives the same development keys in every process when unset outside production", () => {
    const keyring = serviceKeyringOf("jobs", { MODE: "development" });
    expect(serviceKeyringOf("jobs", { MODE: "test" })).toEqual(keyring);
    expect([...keyring.keys()].sort()).toEqual(["auth", "gateway", "jobs", "webhook-dispatcher", "worker"]);
  });

  it.each([
    ["unset", undefined, /is required in production/],
    ["the development keys", devServiceTokenKeys(), /development key/],
    ["keys without the service's own", `auth:k1:${secret()}`, /no key for jobs itself/],
    ["malformed", "jobs:k1:short", /at least 32 characters/],
  ])("refuses to start in production with SERVICE_TOKEN_KEYS %s", (_case, value, message) => {
    const load = () => serviceKeyringOf("jobs", { MODE: "production", SERVICE_TOKEN_KEYS: value });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/SERVICE_TOKEN_KEYS/);
    expect(load).toThrow(message);
  });

  it("accepts real keys in production", () => {
    expect(serviceKeyringOf("jobs", { MODE: "production", SERVICE_TOKEN_KEYS: `jobs:2026-11:${secret()},gateway:2026-11:${secret()}` }).get("jobs")).toHaveLength(1);
  });
});

describe("call tokens", () => {
  const keys = `gateway:g1:${secret()},worker:w1:${secret()},jobs:j1:${secret()}`;
  const gateway = serviceIdentity("gateway", { SERVICE_TOKEN_KEYS: keys });
  const worker = serviceIdentity("worker", { SERVICE_TOKEN_KEYS: keys });
  const jobs = serviceIdentity("jobs", { SERVICE_TOKEN_KEYS: keys });
  const rejection = (token: string) => jobs.verify(token).then(() => "accepted", (error: unknown) => (error instanceof CallTokenError ? "refused" : String(error)));

  it("carries the tenant: sub is the API key, org, role, plan; aud the callee, iss the caller, kid, at most 60 s", async () => {
    const token = await gateway.tokenFor("jobs", "/renderbus.jobs.v1.Jobs/GetJob", AUTH);
    const claims = decodeJwt(token);
    expect(decodeProtectedHeader(token)).toMatchObject({ alg: "HS256", kid: "g1" });
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

  it("refuses a token for another audience, an expired one, a forged one and garbage", async () => {
    expect(await rejection(await gateway.tokenFor("auth", "/x/Y", AUTH))).toBe("refused");
    const gatewayKey = parseServiceTokenKeys(keys).get("gateway")![0]!;
    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({ org: "org_1", plan: "pro", uid: "usr_1" })
      .setProtectedHeader({ alg: "HS256", kid: "g1" })
      .setIssuer("gateway")
      .setSubject("usr_1")
      .setAudience("jobs")
      .setIssuedAt(now - 120)
      .setExpirationTime(now - 60)
      .sign(gatewayKey.secret);
    expect(await rejection(expired)).toBe("refused");
    const longLived = await new SignJWT({}).setProtectedHeader({ alg: "HS256", kid: "g1" }).setIssuer("gateway").setSubject("gateway").setAudience("jobs").setIssuedAt(now).setExpirationTime(now + 3600).sign(gatewayKey.secret);
    expect(await rejection(longLived)).toBe("refused");
    const forged = await new ServiceIdentity("gateway", parseServiceTokenKeys(`gateway:g1:${secret()}`)).tokenFor("jobs", "/x/Y", AUTH);
    expect(await rejection(forged)).toBe("refused");
    const [header, , signature] = (await worker.tokenFor("jobs", "/x/Y")).split(".");
    const claimedGateway = `${header}.${Buffer.from(JSON.stringify({ iss: "gateway", sub: "gateway", aud: "jobs", iat: now, exp: now + 30 })).toString("base64url")}.${signature}`;
    expect(await rejection(claimedGateway)).toBe("refused");
    expect(await rejection("not-a-jwt")).toBe("refused");
  });

  it("refuses unsigned (alg none) tokens", async () => {
    const now = Math.floor(Date.now() / 1000);
    const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
    const unsigned = `${encode({ alg: "none", kid: "g1" })}.${encode({ iss: "gateway", sub: "gateway", aud: "jobs", iat: now, exp: now + 30 })}.`;
    expect(await rejection(unsigned)).toBe("refused");
  });

  it("accepts every listed key of an issuer, so a new key can roll out before the old one is dropped", async () => {
    const [oldKey, newKey] = [secret(), secret()];
    const before = serviceIdentity("gateway", { SERVICE_TOKEN_KEYS: `gateway:old:${oldKey}` });
    const after = serviceIdentity("gateway", { SERVICE_TOKEN_KEYS: `gateway:new:${newKey},gateway:old:${oldKey}` });
    const verifier = serviceIdentity("jobs", { SERVICE_TOKEN_KEYS: `jobs:j1:${secret()},gateway:new:${newKey},gateway:old:${oldKey}` });
    expect(decodeProtectedHeader(await after.tokenFor("jobs", "/x/Y")).kid).toBe("new");
    await expect(verifier.verify(await before.tokenFor("jobs", "/x/Y"))).resolves.toMatchObject({ service: "gateway" });
    await expect(verifier.verify(await after.tokenFor("jobs", "/x/Y"))).resolves.toMatchObject({ service: "gateway" });
    const dropped = serviceIdentity("jobs", { SERVICE_TOKEN_KEYS: `jobs:j1:${secret()},gateway:new:${newKey}` });
    await expect(dropped.verify(await before.tokenFor("jobs", "/x/Y"))).rejects.toBeInstanceOf(CallTokenError);
  });
});
