import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, startMailbox, startSystem, testInfra, testNamespace, type Mailbox, type RunningSystem } from "@renderbus/testing";
import { admin, api, csrfTokenOf, repoRoot, startReceiver, waitFor } from "./helpers.js";

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
    const email = `owner${Date.now()}@example.com`;
    const signUp = await fetch(`${origin}/auth/sign-up/email`, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ email, password: "correct horse battery", name: "Ada" }),
    });
    expect(signUp.status).toBe(200);
    const cookie = signUp.headers.getSetCookie().find((value) => value.startsWith("rb_session="))!.split(";")[0]!;
    expect((await fetch(mailbox.linkFor(email), { redirect: "manual" })).status).toBe(302);
    const me = ((await (await fetch(`${origin}/me`, { headers: { cookie } })).json()) as { data: { orgId: string } }).data;
    await admin(system.env, "org:set-plan", "--org", me.orgId, "--plan", "starter");
    const created = await fetch(`${origin}/api-keys`, {
      method: "POST",
      headers: { cookie, origin, "content-type": "application/json", "x-csrf-token": await csrfTokenOf(origin, cookie) },
      body: JSON.stringify({ name: "alerts" }),
    });
    expect(created.status).toBe(201);
    const call = api(origin, ((await created.json()) as { data: { key: string } }).data.key);

    const gone = await startReceiver(() => 410);
    receivers.push(gone);
    const endpoint = await call("POST", "/webhooks/endpoints", { url: gone.url, events: ["job.running"] });
    expect(endpoint.status).toBe(201);
    expect((await call("POST", "/jobs", { type: "qr.generate", params: { content: "alerts" } })).status).toBe(201);

    const alert = await waitFor(() => mailbox.emailsTo(email).find((mail) => /^Subject: Webhook endpoint disabled in /m.test(mail.raw)), { what: "the endpoint-disabled email" });
    expect(alert.decoded).toContain(`  ${gone.url}\r\n  (${endpoint.body.data.id})`);
    expect(alert.decoded).toContain("Why: the receiver answered 410 Gone.");
    expect(mailbox.linkFor(email, "/app/settings/webhooks")).toBe(`${origin}/app/settings/webhooks`);
    expect((await call("GET", `/webhooks/endpoints/${endpoint.body.data.id}`)).body.data).toMatchObject({ enabled: false, disabledReason: "the receiver answered 410 Gone" });
    expect(gone.received).toHaveLength(1);
  });
});
