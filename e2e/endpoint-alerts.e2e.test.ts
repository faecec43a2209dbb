import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, startMailbox, startSystem, testInfra, testNamespace, type Mailbox, type RunningSystem } from "@renderbus/testing";
import { admin, api, repoRoot, signUp, startReceiver, waitFor } from "./helpers.js";

describe("an org's admins are emailed when the dispatcher disables one of its endpoints", () => {
  let mailbox: Mailbox;
  let system: RunningSystem;
  const receivers: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    const infra = testInfra();
    mailbox = await startMailbox();
    // The services run as their NATS users (a test server widens stream rights across namespaces, so the grants
    // themselves are checked by nats-permissions.test.ts against docs/events.md).
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("endpointalertse2e"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("endpointalertse2e"),
      env: { MODE: "test", SMTP_URL: mailbox.url, WEBHOOK_TIMEOUT_MS: "2000" },
    });
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await mailbox?.close();
    await Promise.all(receivers.map((receiver) => receiver.close()));
  });

  it("disables an endpoint answering 410 and emails the org's confirmed owner, with a link to the Webhooks page", async () => {
    const origin = system.gatewayUrl;
    const owner = await signUp(origin, "Ada");
    expect((await fetch(mailbox.linkFor(owner.email), { redirect: "manual" })).status).toBe(302);
    const { orgId } = ((await (await owner.me()).json()) as { data: { orgId: string } }).data;
    await admin(system.env, "org:set-plan", "--org", orgId, "--plan", "starter");
    const created = await owner.post("/api-keys", { name: "alerts" });
    expect(created.status).toBe(201);
    const call = api(origin, ((await created.json()) as { data: { key: string } }).data.key);

    const gone = await startReceiver(() => 410);
    receivers.push(gone);
    const endpoint = await call("POST", "/webhooks/endpoints", { url: gone.url, events: ["job.running"] });
    expect(endpoint.status).toBe(201);
    expect((await call("POST", "/jobs", { type: "qr.generate", params: { content: "alerts" } })).status).toBe(201);

    const alert = await waitFor(() => mailbox.emailsTo(owner.email).find((mail) => /^Subject: Webhook endpoint disabled in /m.test(mail.raw)), { what: "the endpoint-disabled email" });
    expect(alert.decoded).toContain(`  ${gone.url}\r\n  (${endpoint.body.data.id})`);
    expect(alert.decoded).toContain("Why: the receiver answered 410 Gone.");
    expect(mailbox.linkFor(owner.email, "/app/settings/webhooks")).toBe(`${origin}/app/settings/webhooks`);
    expect((await call("GET", `/webhooks/endpoints/${endpoint.body.data.id}`)).body.data).toMatchObject({ enabled: false, disabledReason: "the receiver answered 410 Gone" });
    expect(gone.received).toHaveLength(1);
  });
});
