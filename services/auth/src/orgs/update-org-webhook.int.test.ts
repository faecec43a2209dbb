import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Bus, STREAMS } from "@renderbus/bus";
import { startAuthHarness, type AuthHarness } from "../testing/auth-harness.js";
import { setPlan } from "../admin/index.js";

const SECRET = `whsec_${randomBytes(16).toString("hex")}`;

describe("UpdateOrgWebhook", () => {
  let harness: AuthHarness;
  let production: AuthHarness;
  beforeAll(async () => {
    harness = await startAuthHarness("webhooks");
    production = await startAuthHarness("webhooksprod", {
      MODE: "production",
      SECRETS_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      BETTER_AUTH_SECRET: randomBytes(32).toString("hex"),
    });
  });
  afterAll(async () => {
    await harness?.stop();
    await production?.stop();
  });

  it("refuses webhooks on the free plan with PLAN_LIMIT", async () => {
    const org = await harness.seedOrg("free");
    await expect(harness.authClient.updateOrgWebhook({ orgId: org.orgId, webhookUrl: "https://example.com/hook", webhookSecret: SECRET }, { auth: org.context })).rejects.toMatchObject({ code: "PLAN_LIMIT" });
  });

  it("sets the webhook on starter, returns only webhookSecretSet, and hands the dispatcher the decrypted secret", async () => {
    const org = await harness.seedOrg("starter");
    const updated = await harness.authClient.updateOrgWebhook({ orgId: org.orgId, webhookUrl: "http://127.0.0.1:9999/hook", webhookSecret: SECRET }, { auth: org.context });
    expect(updated).toMatchObject({ id: org.orgId, plan: "starter", webhookUrl: "http://127.0.0.1:9999/hook", webhookSecretSet: true });
    const current = await harness.authClient.getOrg({}, { auth: org.context });
    expect(current).toMatchObject({ webhookUrl: "http://127.0.0.1:9999/hook", webhookSecretSet: true, credits: 1900 });
    for (const response of [updated, current]) expect(JSON.stringify(response)).not.toContain(SECRET);

    const stored = await harness.store.db.selectFrom("orgs").select("webhook_secret_encrypted").where("id", "=", org.orgId).executeTakeFirstOrThrow();
    expect(stored.webhook_secret_encrypted).not.toContain(SECRET);
    expect(await harness.authClient.getWebhookTarget({ orgId: org.orgId })).toEqual({ orgId: org.orgId, plan: "starter", url: "http://127.0.0.1:9999/hook", secret: SECRET });
    expect(harness.logs.length).toBeGreaterThan(0);
    expect(harness.logs.filter((line) => line.includes(SECRET))).toEqual([]);
  });

  it("refuses a first URL without a signing secret and changes nothing; a stored secret lets the URL change alone", async () => {
    const org = await harness.seedOrg("starter");
    await expect(harness.authClient.updateOrgWebhook({ orgId: org.orgId, webhookUrl: "https://example.com/unsigned" }, { auth: org.context })).rejects.toMatchObject({
      code: "VALIDATION_ERROR",
    });
    expect(await harness.authClient.getWebhookTarget({ orgId: org.orgId })).toEqual({ orgId: org.orgId, plan: "starter" });
    await harness.authClient.updateOrgWebhook({ orgId: org.orgId, webhookUrl: "https://example.com/first", webhookSecret: SECRET }, { auth: org.context });
    await harness.authClient.updateOrgWebhook({ orgId: org.orgId, webhookUrl: "https://example.com/moved" }, { auth: org.context });
    expect(await harness.authClient.getWebhookTarget({ orgId: org.orgId })).toEqual({ orgId: org.orgId, plan: "starter", url: "https://example.com/moved", secret: SECRET });
  });

  it("refuses an http URL in production mode and accepts https", async () => {
    const org = await production.seedOrg("pro");
    await expect(production.authClient.updateOrgWebhook({ orgId: org.orgId, webhookUrl: "http://example.com/hook", webhookSecret: SECRET }, { auth: org.context })).rejects.toMatchObject({ code: "VALIDATION_ERROR" });
    const updated = await production.authClient.updateOrgWebhook({ orgId: org.orgId, webhookUrl: "https://example.com/hook", webhookSecret: SECRET }, { auth: org.context });
    expect(updated.webhookUrl).toBe("https://example.com/hook");
    expect(production.logs.filter((line) => line.includes(SECRET))).toEqual([]);
  });

  it("answers NOT_FOUND for another org's id and FORBIDDEN for members", async () => {
    const orgA = await harness.seedOrg("pro", "A");
    const orgB = await harness.seedOrg("pro", "B");
    await expect(harness.authClient.updateOrgWebhook({ orgId: orgB.orgId, webhookUrl: "https://example.com/h", webhookSecret: SECRET }, { auth: orgA.context })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(harness.authClient.updateOrgWebhook({ orgId: orgA.orgId, webhookUrl: "https://example.com/h", webhookSecret: SECRET }, { auth: { ...orgA.context, role: "member" } })).rejects.toMatchObject({ code: "FORBIDDEN" });
    expect((await harness.authClient.getWebhookTarget({ orgId: orgB.orgId })).url).toBeUndefined();
  });

  it("publishes auth.events.org.updated on webhook and plan changes", async () => {
    const org = await harness.seedOrg("starter");
    const bus = await Bus.connect({ url: harness.config.NATS_URL, name: "test", namespace: harness.config.NATS_NAMESPACE });
    const seen: { orgId: string; plan: string }[] = [];
    const consumer = await bus.consume<{ orgId: string; plan: string }>({
      stream: STREAMS.authEvents,
      durable: "test-org-updates",
      filterSubjects: ["auth.events.org.updated"],
      handler: async (message) => {
        seen.push(message.data);
      },
    });
    try {
      await harness.authClient.updateOrgWebhook({ orgId: org.orgId, webhookUrl: "https://example.com/h", webhookSecret: SECRET }, { auth: org.context });
      await setPlan(harness.store, org.orgId, "scale");
      await expect.poll(() => seen.filter((event) => event.orgId === org.orgId).map((event) => event.plan), { timeout: 10_000 }).toEqual(["starter", "scale"]);
    } finally {
      await consumer.stop();
      await bus.close();
    }
  });
});
