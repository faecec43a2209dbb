import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outcomeOf } from "@renderbus/testing";
import type { AuthContext } from "@renderbus/rpc";
import { startAuthHarness, type AuthHarness } from "../testing/auth-harness.js";

const ORIGIN = "http://127.0.0.1:3000";

/** A signed-in dashboard user calling Better Auth's `/auth/*` routes with its cookie. */
async function signUp(harness: AuthHarness, name: string) {
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
    async call(path: string, body: unknown): Promise<{ status: number; json: any }> {
      const reply = await fetch(`${base}${path}`, { method: "POST", headers: { cookie, origin: ORIGIN, "content-type": "application/json" }, body: JSON.stringify(body) });
      const text = await reply.text();
      return { status: reply.status, json: text ? JSON.parse(text) : undefined };
    },
    async context(): Promise<AuthContext> {
      const context = await harness.authClient.resolveSession({ cookie });
      return { userId: context.userId, orgId: context.orgId, plan: context.plan, role: context.role, credential: context.credential };
    },
  };
}

type Person = Awaited<ReturnType<typeof signUp>>;

/** The owner's org with `name` in it as an admin who has made an API key; returns the key and the member id. */
async function adminWithKey(harness: AuthHarness, owner: Person, name: string) {
  const ownerContext = await owner.context();
  const admin = await signUp(harness, name);
  const invited = await owner.call("/organization/invite-member", { email: admin.email, role: "admin" });
  expect(invited.status).toBe(200);
  expect((await admin.call("/organization/accept-invitation", { invitationId: invited.json.id })).status).toBe(200);
  const adminContext = await admin.context();
  expect(adminContext).toMatchObject({ orgId: ownerContext.orgId, role: "admin" });
  const created = await harness.authClient.createApiKey({ name: `${name}'s key` }, { auth: adminContext });
  return { admin, adminContext, key: created.key, keyId: created.apiKey!.id, ownerContext };
}

describe("API keys act with their creator's current membership", () => {
  let harness: AuthHarness;
  beforeAll(async () => {
    harness = await startAuthHarness("memberkeys");
  });
  afterAll(() => harness?.stop());

  it("acts with the creator's role: an admin's key acts as a member once the admin is demoted", async () => {
    const owner = await signUp(harness, "Owner");
    const { adminContext, key } = await adminWithKey(harness, owner, "Demoted");
    const asAdmin = await harness.authClient.resolveApiKey({ key });
    expect(asAdmin).toMatchObject({ orgId: adminContext.orgId, userId: adminContext.userId, role: "admin", credential: "api_key" });
    expect(await outcomeOf(harness.authClient.createApiKey({ name: "made by the key" }, { auth: asAdmin }))).toBe("ok");

    const memberId = (await harness.store.db.selectFrom("member").select("id").where("userId", "=", adminContext.userId).where("organizationId", "=", adminContext.orgId).executeTakeFirstOrThrow()).id;
    expect((await owner.call("/organization/update-member-role", { memberId, role: "member" })).status).toBe(200);

    const asMember = await harness.authClient.resolveApiKey({ key });
    expect(asMember.role).toBe("member");
    // A manager-only action through the demoted admin's key is refused.
    expect(await outcomeOf(harness.authClient.createApiKey({ name: "not any more" }, { auth: asMember }))).toBe("FORBIDDEN");
    expect(await outcomeOf(harness.authClient.listApiKeys({}, { auth: asMember }))).toBe("ok");
  });

  it("refuses a removed member's keys with UNAUTHORIZED and shows them revoked", async () => {
    const owner = await signUp(harness, "Remover");
    const { admin, key, keyId, ownerContext } = await adminWithKey(harness, owner, "Removed");
    expect((await harness.authClient.resolveApiKey({ key })).orgId).toBe(ownerContext.orgId);

    expect((await owner.call("/organization/remove-member", { memberIdOrEmail: admin.email })).status).toBe(200);

    expect(await outcomeOf(harness.authClient.resolveApiKey({ key }))).toBe("UNAUTHORIZED");
    const listed = await harness.authClient.listApiKeys({}, { auth: ownerContext });
    expect(listed.apiKeys.find((entry) => entry.id === keyId)?.revokedAt).toBeGreaterThan(0);
  });

  it("refuses the keys of a member who leaves", async () => {
    const owner = await signUp(harness, "Left");
    const { admin, key, keyId, ownerContext } = await adminWithKey(harness, owner, "Leaver");
    expect((await admin.call("/organization/leave", { organizationId: ownerContext.orgId })).status).toBe(200);
    expect(await outcomeOf(harness.authClient.resolveApiKey({ key }))).toBe("UNAUTHORIZED");
    const listed = await harness.authClient.listApiKeys({}, { auth: ownerContext });
    expect(listed.apiKeys.find((entry) => entry.id === keyId)?.revokedAt).toBeGreaterThan(0);
  });

  it("refuses a key whose creator is no longer a member even when it was never revoked", async () => {
    const owner = await signUp(harness, "Direct");
    const { adminContext, key } = await adminWithKey(harness, owner, "Vanished");
    // Membership gone without any hook (e.g. deleted by an operator): resolution itself refuses the key.
    await harness.store.db.deleteFrom("member").where("userId", "=", adminContext.userId).where("organizationId", "=", adminContext.orgId).execute();
    expect(await outcomeOf(harness.authClient.resolveApiKey({ key }))).toBe("UNAUTHORIZED");
  });
});
