import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outcomeOf } from "@renderbus/testing";
import type { AuthContext } from "@renderbus/rpc";
import { startAuthHarness, type AuthHarness } from "../testing/auth-harness.js";
import { ORGANIZATIONS_PER_USER } from "../sessions/better-auth.js";

const ORIGIN = "http://127.0.0.1:3000";

/** A signed-in dashboard user talking to Better Auth's `/auth/*` routes with its cookie, as the browser does. */
interface Person {
  email: string;
  cookie: string;
  call(method: "GET" | "POST", path: string, body?: unknown): Promise<{ status: number; json: any }>;
  context(): Promise<AuthContext>;
}

async function signUp(harness: AuthHarness, name: string): Promise<Person> {
  const email = `${name.toLowerCase()}-${randomBytes(4).toString("hex")}@example.com`;
  const base = `http://127.0.0.1:${harness.service.httpPort}/auth`;
  const response = await fetch(`${base}/sign-up/email`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: ORIGIN },
    body: JSON.stringify({ email, password: "correct horse battery", name }),
  });
  expect(response.status).toBe(200);
  const cookie = response.headers.getSetCookie().find((value) => value.startsWith("rb_session="))!.split(";")[0]!;
  return {
    email,
    cookie,
    async call(method, path, body) {
      const reply = await fetch(`${base}${path}`, {
        method,
        headers: { cookie, origin: ORIGIN, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await reply.text();
      return { status: reply.status, json: text ? JSON.parse(text) : undefined };
    },
    async context() {
      const context = await harness.authClient.resolveSession({ cookie });
      return { userId: context.userId, orgId: context.orgId, plan: context.plan, role: context.role, credential: context.credential };
    },
  };
}

describe("organizations on Better Auth's organization plugin: members, roles, invitations", () => {
  let harness: AuthHarness;
  beforeAll(async () => {
    harness = await startAuthHarness("members");
  });
  afterAll(() => harness?.stop());

  it("signs up into a personal org that is a Better Auth organization, active in the new session", async () => {
    const ada = await signUp(harness, "Ada");
    const context = await ada.context();
    const full = await ada.call("GET", "/organization/get-full-organization");
    expect(full.status).toBe(200);
    expect(full.json).toMatchObject({ id: context.orgId, name: "Ada's organization" });
    expect(full.json.members).toMatchObject([{ userId: context.userId, role: "owner" }]);
    const org = await harness.authClient.getOrg({}, { auth: context });
    expect(org).toMatchObject({ id: context.orgId, name: "Ada's organization", plan: "free", credits: 200 });
  });

  it("invites by email; the invitee accepts, acts in the org as a member and may not manage keys", async () => {
    const owner = await signUp(harness, "Owner");
    const ownerContext = await owner.context();
    const invitee = await signUp(harness, "Invitee");
    const personal = await invitee.context();

    const invited = await owner.call("POST", "/organization/invite-member", { email: invitee.email, role: "member" });
    expect(invited.status).toBe(200);
    expect(invited.json).toMatchObject({ email: invitee.email, role: "member", status: "pending", organizationId: ownerContext.orgId });

    const seen = await invitee.call("GET", `/organization/get-invitation?id=${invited.json.id}`);
    expect(seen.status).toBe(200);
    expect(seen.json).toMatchObject({ organizationName: "Owner's organization", inviterEmail: owner.email, role: "member" });
    const accepted = await invitee.call("POST", "/organization/accept-invitation", { invitationId: invited.json.id });
    expect(accepted.status).toBe(200);

    // Accepting makes the invited org the session's active one: the API now acts there, as a member.
    const member = await invitee.context();
    expect(member).toMatchObject({ userId: personal.userId, orgId: ownerContext.orgId, role: "member", plan: "free" });
    expect(await outcomeOf(harness.authClient.createApiKey({ name: "mine" }, { auth: member }))).toBe("FORBIDDEN");
    expect(await outcomeOf(harness.authClient.updateOrgWebhook({ orgId: member.orgId, webhookUrl: "" }, { auth: member }))).toBe("FORBIDDEN");
    // Members see the list but cannot invite.
    const list = await invitee.call("GET", "/organization/list-members");
    expect(list.json.members.map((entry: { role: string }) => entry.role).sort()).toEqual(["member", "owner"]);
    expect((await invitee.call("POST", "/organization/invite-member", { email: "x@example.com", role: "member" })).status).toBe(403);

    // The invitee can switch back to their personal org and forth.
    expect((await invitee.call("POST", "/organization/set-active", { organizationId: personal.orgId })).status).toBe(200);
    expect((await invitee.context()).orgId).toBe(personal.orgId);
    expect((await invitee.call("POST", "/organization/set-active", { organizationId: ownerContext.orgId })).status).toBe(200);

    // Promoted to admin: keys are allowed from the next request on (sessions are never cached).
    const memberId = list.json.members.find((entry: { userId: string }) => entry.userId === personal.userId).id;
    expect((await owner.call("POST", "/organization/update-member-role", { memberId, role: "admin" })).status).toBe(200);
    const admin = await invitee.context();
    expect(admin.role).toBe("admin");
    expect(await outcomeOf(harness.authClient.createApiKey({ name: "admin key" }, { auth: admin }))).toBe("ok");

    // Removed: the session falls back to the user's own org at once.
    expect((await owner.call("POST", "/organization/remove-member", { memberIdOrEmail: invitee.email })).status).toBe(200);
    expect(await invitee.context()).toMatchObject({ orgId: personal.orgId, role: "owner" });
    expect(await outcomeOf(harness.authClient.getOrg({}, { auth: { ...admin, role: "" } }))).toBe("ok"); // org still exists
  });

  it("keeps the owner the owner's to give: admins manage members but cannot make, demote or remove an owner; members change nothing; an org never loses its last owner", async () => {
    const owner = await signUp(harness, "Boss");
    const orgId = (await owner.context()).orgId;
    const join = async (name: string, role: "admin" | "member") => {
      const person = await signUp(harness, name);
      const invited = await owner.call("POST", "/organization/invite-member", { email: person.email, role });
      expect((await person.call("POST", "/organization/accept-invitation", { invitationId: invited.json.id })).status).toBe(200);
      return person;
    };
    const admin = await join("Deputy", "admin");
    const member = await join("Crew", "member");
    const members = (await owner.call("GET", "/organization/list-members")).json.members as { id: string; userId: string; role: string }[];
    const idOf = async (person: Person) => {
      const { userId } = await person.context();
      return members.find((entry) => entry.userId === userId)!.id;
    };
    const [ownerId, adminId, memberId] = [await idOf(owner), await idOf(admin), await idOf(member)];
    const roleOf = async (memberIdToRead: string) =>
      ((await owner.call("GET", "/organization/list-members")).json.members as { id: string; role: string }[]).find((entry) => entry.id === memberIdToRead)?.role;

    // An admin manages members and admins...
    expect((await admin.call("POST", "/organization/update-member-role", { memberId, role: "admin" })).status).toBe(200);
    expect((await admin.call("POST", "/organization/update-member-role", { memberId, role: "member" })).status).toBe(200);
    // ...but cannot make anyone owner, itself included, nor demote or remove the owner.
    expect((await admin.call("POST", "/organization/update-member-role", { memberId: adminId, role: "owner" })).status).toBe(403);
    expect((await admin.call("POST", "/organization/update-member-role", { memberId, role: "owner" })).status).toBe(403);
    expect((await admin.call("POST", "/organization/update-member-role", { memberId: ownerId, role: "member" })).status).toBe(403);
    expect((await admin.call("POST", "/organization/remove-member", { memberIdOrEmail: owner.email })).status).toBeGreaterThanOrEqual(400);
    const ownerInvite = await admin.call("POST", "/organization/invite-member", { email: `heir-${randomBytes(3).toString("hex")}@example.com`, role: "owner" });
    expect(ownerInvite.status).toBe(403);
    // A member changes no one's role, its own included.
    expect((await member.call("POST", "/organization/update-member-role", { memberId, role: "admin" })).status).toBe(403);
    expect((await member.call("POST", "/organization/update-member-role", { memberId: adminId, role: "member" })).status).toBe(403);
    // The only owner cannot step down or leave.
    expect((await owner.call("POST", "/organization/update-member-role", { memberId: ownerId, role: "admin" })).status).toBe(400);
    expect((await owner.call("POST", "/organization/leave", { organizationId: orgId })).status).toBe(400);
    expect([await roleOf(ownerId), await roleOf(adminId), await roleOf(memberId)]).toEqual(["owner", "admin", "member"]);
  });

  it("refuses an invitation to anyone but the invited address, and to a non-member setting it active", async () => {
    const owner = await signUp(harness, "Guarded");
    const stranger = await signUp(harness, "Stranger");
    const invited = await owner.call("POST", "/organization/invite-member", { email: `someone-else-${randomBytes(3).toString("hex")}@example.com`, role: "admin" });
    expect(invited.status).toBe(200);
    const accept = await stranger.call("POST", "/organization/accept-invitation", { invitationId: invited.json.id });
    expect(accept.status).toBeGreaterThanOrEqual(400);
    expect(accept.status).toBeLessThan(500);
    const ownerOrg = (await owner.context()).orgId;
    expect((await stranger.call("POST", "/organization/set-active", { organizationId: ownerOrg })).status).toBe(403);
    expect((await stranger.context()).orgId).not.toBe(ownerOrg);
  });

  it("gives an org created by a user our side too: free plan, its credits, usable at once", async () => {
    const founder = await signUp(harness, "Founder");
    const created = await founder.call("POST", "/organization/create", { name: "Side project", slug: `side-${randomBytes(4).toString("hex")}` });
    expect(created.status).toBe(200);
    expect(created.json.id).toMatch(/^org_/);
    const context = await founder.context();
    expect(context).toMatchObject({ orgId: created.json.id, role: "owner", plan: "free" });
    expect(await harness.authClient.getOrg({}, { auth: context })).toMatchObject({ name: "Side project", plan: "free", credits: 200 });
  });

  it(`caps the organizations one user may belong to at ${ORGANIZATIONS_PER_USER}, the personal one included (each new one comes with free credits)`, async () => {
    const founder = await signUp(harness, "Serial");
    const create = (index: number) => founder.call("POST", "/organization/create", { name: `Venture ${index}`, slug: `venture-${index}-${randomBytes(4).toString("hex")}` });
    for (let index = 2; index <= ORGANIZATIONS_PER_USER; index += 1) expect((await create(index)).status).toBe(200);
    const refused = await create(ORGANIZATIONS_PER_USER + 1);
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.json)).toMatch(/maximum number of organizations/i);
    const listed = await founder.call("GET", "/organization/list");
    expect(listed.json).toHaveLength(ORGANIZATIONS_PER_USER);
  });

  it("never deletes an organization from the dashboard (keys, credits and the ledger hang off it)", async () => {
    const owner = await signUp(harness, "Keeper");
    const { orgId } = await owner.context();
    const deleted = await owner.call("POST", "/organization/delete", { organizationId: orgId });
    expect(deleted.status).toBeGreaterThanOrEqual(400);
    expect((await owner.context()).orgId).toBe(orgId);
  });

  it("heals an org whose settings row is missing (a crash between Better Auth's write and ours)", async () => {
    const user = await signUp(harness, "Healed");
    const { orgId } = await user.context();
    await harness.store.db.deleteFrom("credit_balances").where("org_id", "=", orgId).execute();
    await harness.store.db.deleteFrom("credit_ledger").where("org_id", "=", orgId).execute();
    await harness.store.db.deleteFrom("orgs").where("id", "=", orgId).execute();
    const context = await user.context();
    expect(context).toMatchObject({ orgId, plan: "free", role: "owner" });
    expect(await harness.authClient.getOrg({}, { auth: context })).toMatchObject({ id: orgId, credits: 200 });
  });
});
