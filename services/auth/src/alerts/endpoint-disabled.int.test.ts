import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Bus, STREAMS, type ConsumerHandle } from "@renderbus/bus";
import type { webhooks } from "@renderbus/contracts";
import { newId } from "@renderbus/ids";
import { eventually, startMailbox, testInfra, testNamespace, type Mailbox } from "@renderbus/testing";
import { smtpMailer } from "../email/mailer.js";
import { startAuthHarness, type AuthHarness } from "../testing/auth-harness.js";
import { ENDPOINT_DISABLED_SUBJECT, startEndpointAlerts } from "./endpoint-disabled.consumer.js";

const PUBLIC_URL = "https://renderbus.example.com";

describe("emails about endpoints the dispatcher disabled", () => {
  let mailbox: Mailbox;
  let harness: AuthHarness;
  let dispatcherBus: Bus;
  beforeAll(async () => {
    mailbox = await startMailbox();
    harness = await startAuthHarness("endpointalerts", { SMTP_URL: mailbox.url, PUBLIC_URL, ENDPOINT_ALERTS_PER_ORG_PER_HOUR: "2" });
    // What the dispatcher's outbox relay does: the announcement on its subject, the event id as the message id.
    dispatcherBus = await Bus.connect({ url: testInfra().natsUrl, name: "test-dispatcher", namespace: harness.config.NATS_NAMESPACE });
  });
  afterAll(async () => {
    await dispatcherBus?.close();
    await harness?.stop();
    await mailbox?.close();
  });

  /** A user of the org with `role`, whose address is confirmed or not. */
  async function member(orgId: string, role: string, confirmed: boolean): Promise<string> {
    const userId = newId("usr");
    const email = `${userId.toLowerCase()}@example.com`;
    const now = new Date();
    await sql`insert into "user" (id, name, email, "emailVerified", "createdAt", "updatedAt") values (${userId}, ${"Ada"}, ${email}, ${confirmed}, ${now}, ${now})`.execute(harness.store.db);
    await sql`insert into member (id, "organizationId", "userId", role, "createdAt") values (${`mem_${userId}`}, ${orgId}, ${userId}, ${role}, ${now})`.execute(harness.store.db);
    return email;
  }

  const announcement = (orgId: string, eventId = newId("evt"), endpointId = "ep_01"): webhooks.EndpointDisabled => ({
    eventId,
    orgId,
    endpointId,
    url: "https://hooks.example.com/renderbus",
    reason: "the receiver answered 410 Gone",
    disabledAt: Date.now(),
  });
  /** How many emails each address got, once every one of them got one (or after 10 s). */
  const mailedOnce = (...addresses: string[]) =>
    eventually(
      async () => addresses.map((address) => mailbox.emailsTo(address).length),
      (counts) => counts.every((count) => count >= 1),
    );
  const announce = (bus: Bus, event: webhooks.EndpointDisabled, msgId = event.eventId) =>
    bus.publish(ENDPOINT_DISABLED_SUBJECT, event, { msgId, headers: { "Rb-Event-Type": "endpoint.disabled", "Rb-Org-Id": event.orgId } });

  it("emails the org's owners and admins whose addresses are confirmed, once per disable", async () => {
    const org = await harness.seedOrg("pro", "Analytical Engines");
    const owner = await member(org.orgId, "owner", true);
    const admin = await member(org.orgId, "member,admin", true);
    const unconfirmedAdmin = await member(org.orgId, "admin", false);
    const plainMember = await member(org.orgId, "member", true);
    const event = announcement(org.orgId);

    await announce(dispatcherBus, event);
    expect(await mailedOnce(owner, admin)).toEqual([1, 1]);
    const [mail] = mailbox.emailsTo(owner);
    expect(mail!.raw).toMatch(/^Subject: Webhook endpoint disabled in Analytical Engines/m);
    expect(mail!.decoded).toContain("  https://hooks.example.com/renderbus\r\n  (ep_01)");
    expect(mail!.decoded).toContain("Why: the receiver answered 410 Gone.");
    expect(mailbox.linkFor(owner, "/app/settings/webhooks")).toBe(`${PUBLIC_URL}/app/settings/webhooks`);

    // The same event again (a redelivery past JetStream's duplicate window), then another org's: once that one is
    // mailed, the repeat has been handled, and it mailed nobody.
    await announce(dispatcherBus, event, newId("evt"));
    const other = await harness.seedOrg("pro", "Other");
    const otherOwner = await member(other.orgId, "owner", true);
    await announce(dispatcherBus, announcement(other.orgId));
    expect(await mailedOnce(otherOwner)).toEqual([1]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(mailbox.emailsTo(owner)).toHaveLength(1);
    expect(mailbox.emailsTo(admin)).toHaveLength(1);
    expect(mailbox.emailsTo(unconfirmedAdmin)).toEqual([]);
    expect(mailbox.emailsTo(plainMember)).toEqual([]);
    // The operator-created org's service owner (an address under .invalid) is never mailed.
    expect(mailbox.received.filter((received) => received.to.some((to) => to.endsWith(".invalid")))).toEqual([]);
    expect(harness.logs.join("")).not.toContain("ignored");
  });

  it("ignores an announcement without its fields, and an org it does not know", async () => {
    const org = await harness.seedOrg("pro");
    const owner = await member(org.orgId, "owner", true);
    await dispatcherBus.publish(ENDPOINT_DISABLED_SUBJECT, { orgId: org.orgId, url: "https://x.example" }, { msgId: newId("evt") });
    await announce(dispatcherBus, announcement(newId("org")));
    await announce(dispatcherBus, announcement(org.orgId));
    expect(await mailedOnce(owner)).toEqual([1]);
    const logged = await eventually(async () => harness.logs.join(""), (logs) => logs.includes("endpoint.disabled announcement without its fields: ignored"));
    expect(logged).toContain("endpoint.disabled announcement without its fields: ignored");
  });

  it("mails at most ENDPOINT_ALERTS_PER_ORG_PER_HOUR of an org's disables in any hour", async () => {
    // A member can disable endpoints at will (receivers that answer 410 to a test event, enabled again, and so on).
    const org = await harness.seedOrg("pro");
    const owner = await member(org.orgId, "owner", true);
    const first = announcement(org.orgId, newId("evt"), "ep_a");
    await announce(dispatcherBus, first);
    await announce(dispatcherBus, announcement(org.orgId, newId("evt"), "ep_b"));
    await announce(dispatcherBus, announcement(org.orgId, newId("evt"), "ep_c"));
    const limited = await eventually(async () => harness.logs.join(""), (logs) => logs.includes("the org's hourly alert limit is reached"));
    expect(limited).toContain(org.orgId);
    // An admitted disable stays admitted: its redelivery is handled as before (nobody mailed twice), not refused.
    await announce(dispatcherBus, first, newId("evt"));
    // Another org's disable is mailed: the limit is the org's, and once that email arrived the ones above were handled.
    const other = await harness.seedOrg("pro");
    const otherOwner = await member(other.orgId, "owner", true);
    await announce(dispatcherBus, announcement(other.orgId));
    expect(await mailedOnce(otherOwner)).toEqual([1]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(mailbox.emailsTo(owner)).toHaveLength(2);

    // An hour later the org has its places again.
    await sql`update alert_events set admitted_at = admitted_at - ${60 * 60 * 1000} where org_id = ${org.orgId}`.execute(harness.store.db);
    await announce(dispatcherBus, announcement(org.orgId, newId("evt"), "ep_c"));
    expect(await eventually(async () => mailbox.emailsTo(owner).length, (count) => count >= 3)).toBe(3);
  });

  it("mails an endpoint's disable once an hour, so cycling one endpoint cannot use up the org's places", async () => {
    const org = await harness.seedOrg("pro");
    const owner = await member(org.orgId, "owner", true);
    await announce(dispatcherBus, announcement(org.orgId, newId("evt"), "ep_cycled"));
    expect(await mailedOnce(owner)).toEqual([1]);
    // The same endpoint disabled again and again within the hour (enabled in between): its admins already know.
    for (let round = 0; round < 3; round += 1) await announce(dispatcherBus, announcement(org.orgId, newId("evt"), "ep_cycled"));
    const repeats = await eventually(
      async () => harness.logs.join("").split("this endpoint's disable was mailed less than an hour ago").length - 1,
      (count) => count >= 3,
    );
    expect(repeats).toBeGreaterThanOrEqual(3);
    // Another endpoint's disable in that hour is mailed: the limit (2 here) was not used up by the repeats.
    await announce(dispatcherBus, announcement(org.orgId, newId("evt"), "ep_other"));
    expect(await eventually(async () => mailbox.emailsTo(owner).length, (count) => count >= 2)).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(mailbox.emailsTo(owner).map((mail) => /\((ep_\w+)\)/.exec(mail.decoded)?.[1])).toEqual(["ep_cycled", "ep_other"]);
    // An hour after its email, the endpoint's next disable is mailed again.
    await sql`update alert_events set admitted_at = admitted_at - ${60 * 60 * 1000} where org_id = ${org.orgId}`.execute(harness.store.db);
    await announce(dispatcherBus, announcement(org.orgId, newId("evt"), "ep_cycled"));
    expect(await eventually(async () => mailbox.emailsTo(owner).length, (count) => count >= 3)).toBe(3);
  });

  describe("when the mail server refuses", () => {
    // A consumer of its own (its own namespace, a short retry) beside the service's: the wait between tries is a minute.
    let bus: Bus;
    let alerts: ConsumerHandle;
    beforeAll(async () => {
      bus = await Bus.connect({ url: testInfra().natsUrl, name: "test-alerts", namespace: testNamespace("endpointalertsretry") });
      await bus.ensureStreams([STREAMS.webhookEvents]);
      alerts = await startEndpointAlerts({ bus, db: harness.store.db, mailer: smtpMailer({ SMTP_URL: mailbox.url, PUBLIC_URL }), publicUrl: PUBLIC_URL, retryDelayMs: 200, perOrgPerHour: 5 });
    });
    afterAll(async () => {
      mailbox.refuse(false);
      await alerts?.stop();
      await bus?.close();
    });

    it("tries again until it takes the email, and mails each recipient once", async () => {
      const org = await harness.seedOrg("pro");
      const owner = await member(org.orgId, "owner", true);
      const admin = await member(org.orgId, "admin", true);
      mailbox.refuse(true);
      await announce(bus, announcement(org.orgId));
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(mailbox.emailsTo(owner)).toEqual([]);
      mailbox.refuse(false);
      expect(await mailedOnce(owner, admin)).toEqual([1, 1]);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(mailbox.emailsTo(owner)).toHaveLength(1);
      expect(mailbox.emailsTo(admin)).toHaveLength(1);
    });
  });
});
