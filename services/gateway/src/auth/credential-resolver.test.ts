import { describe, expect, it } from "vitest";
import { AppError, unauthorized } from "@renderbus/errors";
import type { auth } from "@renderbus/contracts";
import type { PromiseClient } from "@renderbus/rpc";
import { outcomeOf } from "@renderbus/testing";
import { CredentialResolver, DEFAULT_MARKS_RECHECK_MS, keyHashOf } from "./credential-resolver.js";
import type { CredentialMarks, CredentialMarkState } from "./credential-marks.js";

const keyOf = (index: number) => `rb_${String(index).padStart(43, "k")}`;

/** An auth service that knows the keys in `known` (org per key) and counts its lookups. */
function fakeAuth(known: Map<string, string>) {
  const calls: string[] = [];
  const client = {
    async resolveApiKey({ key }: { key: string }) {
      calls.push(key);
      const orgId = known.get(key);
      if (!orgId) throw unauthorized();
      return { userId: "usr_1", orgId, plan: "pro", role: "admin", credential: "api_key", apiKeyId: `key_${key.slice(-6)}` };
    },
  } as unknown as PromiseClient<auth.AuthClient>;
  return { client, calls };
}

/** Redis marks kept in memory (the Redis side is covered by the gateway e2e test). */
function memoryMarks() {
  const revoked = new Set<string>();
  const epochs = new Map<string, number>();
  const marks = {
    async markRevoked(apiKeyId: string) {
      revoked.add(apiKeyId);
    },
    async bumpOrg(orgId: string) {
      epochs.set(orgId, (epochs.get(orgId) ?? 0) + 1);
    },
    async orgEpoch(orgId: string) {
      return String(epochs.get(orgId) ?? 0);
    },
    async read(apiKeyId: string, orgId: string): Promise<CredentialMarkState> {
      return { revoked: revoked.has(apiKeyId), orgEpoch: String(epochs.get(orgId) ?? 0) };
    },
  };
  return marks as unknown as CredentialMarks;
}

describe("CredentialResolver", () => {
  it("answers a repeated unknown key from memory for the negative TTL, then asks again", async () => {
    let now = 1_000_000;
    const { client, calls } = fakeAuth(new Map());
    const resolver = new CredentialResolver({ auth: client, ttlMs: 10_000, negativeTtlMs: 5_000, now: () => now });
    for (let attempt = 0; attempt < 5; attempt += 1) expect(await outcomeOf(resolver.resolveApiKey(keyOf(1)))).toBe("UNAUTHORIZED");
    expect(calls).toHaveLength(1);
    now += 5_001;
    expect(await outcomeOf(resolver.resolveApiKey(keyOf(1)))).toBe("UNAUTHORIZED");
    expect(calls).toHaveLength(2);
  });

  it("never caches an unavailable auth service as a refusal", async () => {
    let fail = true;
    const resolver = new CredentialResolver({
      auth: {
        async resolveApiKey() {
          if (fail) throw new AppError("SERVICE_UNAVAILABLE", "down");
          return { userId: "usr_1", orgId: "org_1", plan: "pro", role: "admin", credential: "api_key", apiKeyId: "key_1" };
        },
      } as unknown as PromiseClient<auth.AuthClient>,
      ttlMs: 10_000,
    });
    expect(await outcomeOf(resolver.resolveApiKey(keyOf(1)))).toBe("SERVICE_UNAVAILABLE");
    fail = false;
    expect((await resolver.resolveApiKey(keyOf(1))).orgId).toBe("org_1");
  });

  it("holds at most maxEntries keys, dropping the least recently used", async () => {
    const known = new Map(Array.from({ length: 50 }, (_, index) => [keyOf(index), "org_1"] as const));
    const { client, calls } = fakeAuth(known);
    const resolver = new CredentialResolver({ auth: client, ttlMs: 60_000, maxEntries: 10 });
    for (let index = 0; index < 50; index += 1) await resolver.resolveApiKey(keyOf(index));
    expect(resolver.size.resolved).toBe(10);
    await resolver.resolveApiKey(keyOf(49));
    expect(calls).toHaveLength(50); // the most recent key is still cached
    await resolver.resolveApiKey(keyOf(0));
    expect(calls).toHaveLength(51); // the oldest was evicted
  });

  it("bounds the refusals too: a flood of distinct bogus keys holds at most maxEntries", async () => {
    const { client } = fakeAuth(new Map());
    const resolver = new CredentialResolver({ auth: client, ttlMs: 10_000, maxEntries: 10 });
    for (let index = 0; index < 100; index += 1) await outcomeOf(resolver.resolveApiKey(keyOf(index)));
    expect(resolver.size.refused).toBe(10);
  });

  it("sweeps expired entries out of memory without them being used again", async () => {
    let now = 1_000_000;
    const known = new Map(Array.from({ length: 20 }, (_, index) => [keyOf(index), "org_1"] as const));
    const { client } = fakeAuth(known);
    const resolver = new CredentialResolver({ auth: client, ttlMs: 10_000, now: () => now });
    for (let index = 0; index < 20; index += 1) await resolver.resolveApiKey(keyOf(index));
    expect(resolver.size.resolved).toBe(20);
    now += 20_001;
    await resolver.resolveApiKey(keyOf(0));
    expect(resolver.size.resolved).toBe(1);
  });

  it("refuses a cached key once it is marked revoked (another replica revoked it) and asks nobody", async () => {
    let now = 1_000_000;
    const marks = memoryMarks();
    const { client, calls } = fakeAuth(new Map([[keyOf(1), "org_1"]]));
    const resolver = new CredentialResolver({ auth: client, ttlMs: 60_000, marks, now: () => now });
    const context = await resolver.resolveApiKey(keyOf(1));
    await marks.markRevoked(context.apiKeyId!);
    now += DEFAULT_MARKS_RECHECK_MS;
    expect(await outcomeOf(resolver.resolveApiKey(keyOf(1)))).toBe("UNAUTHORIZED");
    expect(calls).toHaveLength(1);
  });

  it("reads a cached key's marks at most once per recheck interval, one read for concurrent requests", async () => {
    let now = 1_000_000;
    const marks = memoryMarks();
    let reads = 0;
    const read = marks.read.bind(marks);
    marks.read = async (...args) => {
      reads += 1;
      await new Promise((resolve) => setTimeout(resolve, 5));
      return read(...args);
    };
    const { client } = fakeAuth(new Map([[keyOf(1), "org_1"]]));
    const resolver = new CredentialResolver({ auth: client, ttlMs: 60_000, marks, marksRecheckMs: 250, now: () => now });
    const context = await resolver.resolveApiKey(keyOf(1));
    for (let request = 0; request < 10; request += 1) await resolver.resolveApiKey(keyOf(1));
    expect(reads).toBe(0);
    now += 250;
    await Promise.all(Array.from({ length: 10 }, () => resolver.resolveApiKey(keyOf(1))));
    expect(reads).toBe(1);
    // Revoked on another replica: still served until the interval since the last read is over, then refused.
    await marks.markRevoked(context.apiKeyId!);
    now += 249;
    expect(await outcomeOf(resolver.resolveApiKey(keyOf(1)))).toBe("ok");
    now += 1;
    expect(await outcomeOf(resolver.resolveApiKey(keyOf(1)))).toBe("UNAUTHORIZED");
    expect(reads).toBe(2);
  });

  it("reads the marks on every request with a recheck interval of 0", async () => {
    const marks = memoryMarks();
    const { client } = fakeAuth(new Map([[keyOf(1), "org_1"]]));
    const resolver = new CredentialResolver({ auth: client, ttlMs: 60_000, marks, marksRecheckMs: 0 });
    const context = await resolver.resolveApiKey(keyOf(1));
    await marks.markRevoked(context.apiKeyId!);
    expect(await outcomeOf(resolver.resolveApiKey(keyOf(1)))).toBe("UNAUTHORIZED");
  });

  it("resolves a cached key again once its org changed (a demoted or removed creator, a new plan)", async () => {
    let now = 1_000_000;
    const marks = memoryMarks();
    const known = new Map([[keyOf(1), "org_1"]]);
    const { client, calls } = fakeAuth(known);
    const resolver = new CredentialResolver({ auth: client, ttlMs: 60_000, marks, now: () => now });
    await resolver.resolveApiKey(keyOf(1));
    await resolver.resolveApiKey(keyOf(1));
    expect(calls).toHaveLength(1);
    await marks.bumpOrg("org_1");
    now += DEFAULT_MARKS_RECHECK_MS;
    known.delete(keyOf(1)); // the creator was removed
    expect(await outcomeOf(resolver.resolveApiKey(keyOf(1)))).toBe("UNAUTHORIZED");
    expect(calls).toHaveLength(2);
  });

  it("drops a key by hash or id on a revocation event and remembers the refusal", async () => {
    const known = new Map([[keyOf(1), "org_1"], [keyOf(2), "org_1"]]);
    const { client, calls } = fakeAuth(known);
    const resolver = new CredentialResolver({ auth: client, ttlMs: 60_000 });
    const first = await resolver.resolveApiKey(keyOf(1));
    await resolver.resolveApiKey(keyOf(2));
    await resolver.revokeApiKey({ apiKeyId: first.apiKeyId, keyHash: keyHashOf(keyOf(1)) });
    expect(await outcomeOf(resolver.resolveApiKey(keyOf(1)))).toBe("UNAUTHORIZED");
    await resolver.resolveApiKey(keyOf(2));
    expect(calls).toHaveLength(2);
  });

  it("asks the auth service nothing until the request is admitted, and a refused admission wins over any answer", async () => {
    const marks = memoryMarks();
    const { client, calls } = fakeAuth(new Map([[keyOf(1), "org_1"]]));
    const resolver = new CredentialResolver({ auth: client, ttlMs: 60_000, marks });
    const rateLimited = () => Promise.reject(new AppError("RATE_LIMITED", "over", { retryAfterSeconds: 1 }));
    for (const headers of [{ authorization: `Bearer ${keyOf(1)}` }, { authorization: `Bearer ${keyOf(2)}` }, { authorization: "Basic x" }, { cookie: "rb_session=x" }, {}]) {
      expect(await outcomeOf(resolver.resolve(headers, rateLimited()))).toBe("RATE_LIMITED");
    }
    expect(calls).toHaveLength(0);
    await resolver.resolve({ authorization: `Bearer ${keyOf(1)}` });
    // Cached now: the marks are read alongside the admission, whose refusal still wins.
    expect(await outcomeOf(resolver.resolve({ authorization: `Bearer ${keyOf(1)}` }, rateLimited()))).toBe("RATE_LIMITED");
    let admit!: () => void;
    const admission = new Promise<void>((resolve) => (admit = resolve));
    let settled = false;
    const pending = resolver.resolve({ authorization: `Bearer ${keyOf(2)}` }, admission).finally(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(settled).toBe(false);
    expect(calls).toHaveLength(1);
    admit();
    expect(await outcomeOf(pending)).toBe("UNAUTHORIZED");
    expect(calls).toHaveLength(2);
  });
});
