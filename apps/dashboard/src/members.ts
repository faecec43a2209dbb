// With extensions: the root type-check (node16 resolution) reaches this file through its unit test.
import type { Invitation, Member, Role } from "./organization-types.js";
// The servers' rule (a file with no imports, bundled as is).
import { isManagerRole } from "../../../libs/rpc/src/auth-context.js";

/**
 * Who may do what on the Members page. Better Auth enforces the same rules on the server; the page applies them
 * first so people are offered only what will work. Pure, so they are unit-tested (test/members.test.ts).
 */

/** Only owners and admins manage members, API keys and webhooks. */
export function canManage(role: string | null | undefined): boolean {
  return isManagerRole(role ?? undefined);
}

export function hasRole(member: Pick<Member, "role">, role: Role): boolean {
  return member.role.split(",").map((part) => part.trim()).includes(role);
}

/** The role to show and edit: the strongest one when Better Auth holds several. */
export function mainRole(member: Pick<Member, "role">): Role {
  if (hasRole(member, "owner")) return "owner";
  if (hasRole(member, "admin")) return "admin";
  return "member";
}

export interface MemberActions {
  /** The roles the viewer may give this member (including the current one), or none when the role is fixed. */
  roleOptions: Role[];
  canRemove: boolean;
}

const NONE: MemberActions = { roleOptions: [], canRemove: false };

/**
 * What the viewer may change about one member. Admins cannot touch owners or make anyone an owner; an org always
 * keeps at least one owner, so its last owner can neither step down nor be removed.
 */
export function actionsFor(viewer: { userId: string; role: string | null | undefined }, target: Member, members: Member[]): MemberActions {
  if (!canManage(viewer.role)) return NONE;
  const targetIsOwner = hasRole(target, "owner");
  if (targetIsOwner && viewer.role !== "owner") return NONE;
  const owners = members.filter((member) => hasRole(member, "owner")).length;
  if (targetIsOwner && owners <= 1) return NONE;
  const roleOptions: Role[] = viewer.role === "owner" ? ["owner", "admin", "member"] : ["admin", "member"];
  return { roleOptions, canRemove: true };
}

/** Invitations still waiting for an answer; Better Auth also keeps accepted, declined, cancelled and expired ones. */
export function pendingInvitations(invitations: Invitation[], now: number): Invitation[] {
  return invitations.filter((invitation) => invitation.status === "pending" && Date.parse(invitation.expiresAt) > now);
}

/** The link an invitee opens: there is no email sending, so whoever invites shares this by hand. */
export function invitationUrl(origin: string, invitationId: string): string {
  return `${origin}/app/invitations/${encodeURIComponent(invitationId)}`;
}

/** Anyone may leave an org, except its last owner, who would leave it ownerless. */
export function canLeave(self: Member, members: Member[]): boolean {
  return !hasRole(self, "owner") || members.filter((member) => hasRole(member, "owner")).length > 1;
}
