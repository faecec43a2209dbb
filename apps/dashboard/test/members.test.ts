import { describe, expect, it } from "vitest";
import { actionsFor, canLeave, canManage, invitationUrl, mainRole, pendingInvitations } from "../src/members.js";
import type { Invitation, Member } from "../src/organization-types.js";

const member = (id: string, role: string): Member => ({
  id,
  organizationId: "org_1",
  userId: `usr_${id}`,
  role,
  createdAt: "2026-11-23T10:00:00.000Z",
  user: { id: `usr_${id}`, name: id, email: `${id}@example.com` },
});

describe("who may change whom on the Members page", () => {
  const owner = member("olga", "owner");
  const admin = member("ari", "admin");
  const plain = member("max", "member");
  const team = [owner, admin, plain];

  it("lets only owners and admins manage members", () => {
    expect(["owner", "admin", "member", null].map(canManage)).toEqual([true, true, false, false]);
    expect(actionsFor({ userId: plain.userId, role: "member" }, admin, team)).toEqual({ roleOptions: [], canRemove: false });
  });

  it("lets an owner make anyone an owner, and an admin only choose between admin and member", () => {
    expect(actionsFor({ userId: owner.userId, role: "owner" }, plain, team)).toEqual({ roleOptions: ["owner", "admin", "member"], canRemove: true });
    expect(actionsFor({ userId: admin.userId, role: "admin" }, plain, team)).toEqual({ roleOptions: ["admin", "member"], canRemove: true });
  });

  it("keeps owners out of an admin's reach", () => {
    expect(actionsFor({ userId: admin.userId, role: "admin" }, owner, team)).toEqual({ roleOptions: [], canRemove: false });
  });

  it("never leaves an org without an owner, but lets one of two owners step down", () => {
    expect(actionsFor({ userId: owner.userId, role: "owner" }, owner, team)).toEqual({ roleOptions: [], canRemove: false });
    const second = member("sol", "owner");
    expect(actionsFor({ userId: owner.userId, role: "owner" }, owner, [...team, second]).canRemove).toBe(true);
  });

  it("lets anyone leave except the last owner", () => {
    expect(canLeave(plain, team)).toBe(true);
    expect(canLeave(owner, team)).toBe(false);
    expect(canLeave(owner, [...team, member("sol", "owner")])).toBe(true);
  });

  it("shows the strongest of several roles", () => {
    expect(mainRole({ role: "member,admin" })).toBe("admin");
    expect(mainRole({ role: "member" })).toBe("member");
  });
});

describe("pending invitations", () => {
  const invitation = (id: string, status: Invitation["status"], expiresAt: string): Invitation => ({ id, organizationId: "org_1", email: `${id}@example.com`, role: "member", status, expiresAt, inviterId: "usr_olga" });
  const now = Date.parse("2026-11-23T12:00:00.000Z");

  it("lists only the ones still waiting for an answer", () => {
    const all = [
      invitation("open", "pending", "2026-11-25T12:00:00.000Z"),
      invitation("late", "pending", "2026-11-23T11:59:59.000Z"),
      invitation("taken", "accepted", "2026-11-25T12:00:00.000Z"),
      invitation("called-off", "canceled", "2026-11-25T12:00:00.000Z"),
    ];
    expect(pendingInvitations(all, now).map((item) => item.id)).toEqual(["open"]);
  });

  it("links to the dashboard's invitation page", () => {
    expect(invitationUrl("https://renderbus.example", "a1/b")).toBe("https://renderbus.example/app/invitations/a1%2Fb");
  });
});
