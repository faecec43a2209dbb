import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outcomeOf } from "@renderbus/testing";
import { startAuthHarness, type AuthHarness } from "../testing/auth-harness.js";

describe("API keys through gRPC", () => {
  let harness: AuthHarness;
  beforeAll(async () => {
    harness = await startAuthHarness("apikeys");
  });
  afterAll(() => harness?.stop());

  it("shows a new key once, never lists it, and rejects it with UNAUTHORIZED once revoked", async () => {
    const org = await harness.seedOrg("pro");
    const created = await harness.authClient.createApiKey({ name: "ci" }, { auth: org.context });
    expect(created.key).toMatch(/^rb_[A-Za-z0-9_-]{43}$/);
    expect(created.apiKey?.id).toMatch(/^key_/);
    expect(created.apiKey?.start).toBe(created.key.slice(0, 8));

    const resolved = await harness.authClient.resolveApiKey({ key: created.key });
    expect(resolved).toMatchObject({ orgId: org.orgId, userId: org.userId, plan: "pro", apiKeyId: created.apiKey?.id, credential: "api_key" });

    const listed = await harness.authClient.listApiKeys({}, { auth: org.context });
    expect(listed.apiKeys.map((key) => key.id)).toContain(created.apiKey?.id);
    expect(JSON.stringify(listed)).not.toContain(created.key);
    expect(JSON.stringify(listed)).not.toContain(created.key.slice(8));

    const revoked = await harness.authClient.revokeApiKey({ keyId: created.apiKey!.id }, { auth: org.context });
    expect(revoked.revokedAt).toBeGreaterThan(0);
    expect(await outcomeOf(harness.authClient.resolveApiKey({ key: created.key }))).toBe("UNAUTHORIZED");
    const after = await harness.authClient.listApiKeys({}, { auth: org.context });
    expect(after.apiKeys.find((key) => key.id === created.apiKey?.id)?.revokedAt).toBe(revoked.revokedAt);
  });

  it("creates a key with a key and records when a key was last used", async () => {
    const org = await harness.seedOrg("free");
    const viaKey = await harness.authClient.resolveApiKey({ key: org.apiKey });
    const created = await harness.authClient.createApiKey({ name: "made by a key" }, { auth: viaKey });
    expect((await harness.authClient.resolveApiKey({ key: created.key })).orgId).toBe(org.orgId);
    await expect.poll(async () => (await harness.authClient.listApiKeys({}, { auth: viaKey })).apiKeys.find((key) => key.id === org.apiKeyId)?.lastUsedAt).toBeGreaterThan(0);
  });

  it("returns UNAUTHORIZED for unknown and malformed keys", async () => {
    for (const key of ["", "rb_", "rb_" + "A".repeat(43), "Bearer x", "rb_\u0000\u00ff", "x".repeat(10_000)]) {
      expect(await outcomeOf(harness.authClient.resolveApiKey({ key }))).toBe("UNAUTHORIZED");
    }
  });

  it("returns NOT_FOUND when a key of org A revokes a key of org B, and B's key keeps working", async () => {
    const orgA = await harness.seedOrg("pro", "A");
    const orgB = await harness.seedOrg("pro", "B");
    expect(await outcomeOf(harness.authClient.revokeApiKey({ keyId: orgB.apiKeyId }, { auth: orgA.context }))).toBe("NOT_FOUND");
    expect(await outcomeOf(harness.authClient.revokeApiKey({ keyId: "key_nonsense" }, { auth: orgA.context }))).toBe("NOT_FOUND");
    const listedByA = await harness.authClient.listApiKeys({}, { auth: orgA.context });
    expect(listedByA.apiKeys.map((key) => key.id)).not.toContain(orgB.apiKeyId);
    expect((await harness.authClient.resolveApiKey({ key: orgB.apiKey })).orgId).toBe(orgB.orgId);
  });

  it("validates the key name and refuses members with FORBIDDEN", async () => {
    const org = await harness.seedOrg("pro");
    expect(await outcomeOf(harness.authClient.createApiKey({ name: "" }, { auth: org.context }))).toBe("VALIDATION_ERROR");
    expect(await outcomeOf(harness.authClient.createApiKey({ name: "x".repeat(101) }, { auth: org.context }))).toBe("VALIDATION_ERROR");
    const member = { ...org.context, role: "member" };
    expect(await outcomeOf(harness.authClient.createApiKey({ name: "nope" }, { auth: member }))).toBe("FORBIDDEN");
    expect(await outcomeOf(harness.authClient.revokeApiKey({ keyId: org.apiKeyId }, { auth: member }))).toBe("FORBIDDEN");
  });

  it("refuses to mint a key for an OAuth token, even an owner's: the key would outlive the grant", async () => {
    const org = await harness.seedOrg("pro");
    const agent = { ...org.context, role: "owner", credential: "oauth" };
    expect(await outcomeOf(harness.authClient.createApiKey({ name: "agent's key" }, { auth: agent }))).toBe("FORBIDDEN");
    expect((await harness.authClient.listApiKeys({}, { auth: org.context })).apiKeys.map((key) => key.name)).not.toContain("agent's key");
    // Keys it may still list and revoke, as its user could.
    expect((await harness.authClient.revokeApiKey({ keyId: org.apiKeyId }, { auth: agent })).revokedAt).toBeTruthy();
  });

  it("publishes auth.events.api_key.revoked with the key hash on revocation", async () => {
    const org = await harness.seedOrg("pro");
    const { Bus } = await import("@renderbus/bus");
    const bus = await Bus.connect({ url: harness.config.NATS_URL, name: "test", namespace: harness.config.NATS_NAMESPACE });
    const seen: { apiKeyId: string; keyHash: string; orgId: string }[] = [];
    const { STREAMS } = await import("@renderbus/bus");
    const consumer = await bus.consume<{ apiKeyId: string; keyHash: string; orgId: string }>({
      stream: STREAMS.authEvents,
      durable: "test-revocations",
      filterSubjects: ["auth.events.api_key.revoked"],
      handler: async (message) => {
        seen.push(message.data);
      },
    });
    try {
      await harness.authClient.revokeApiKey({ keyId: org.apiKeyId }, { auth: org.context });
      const { hashApiKey } = await import("./api-key.js");
      await expect.poll(() => seen.find((event) => event.apiKeyId === org.apiKeyId), { timeout: 10_000 }).toMatchObject({ orgId: org.orgId, keyHash: hashApiKey(org.apiKey) });
    } finally {
      await consumer.stop();
      await bus.close();
    }
  });
});
