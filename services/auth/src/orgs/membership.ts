import { sql } from "kysely";
import { forbidden } from "@renderbus/errors";
import type { PlanName } from "@renderbus/plans";
import { isManagerRole, type AuthContext } from "@renderbus/rpc";
import type { AuthResources } from "../auth-resources.js";
import type { Role } from "../database.js";
import { ensureOrgSettings } from "./create-org.js";

/** The caller's role in its org: from the auth context when the gateway sent it, else from membership. */
export async function roleOf(store: AuthResources, context: AuthContext): Promise<Role | undefined> {
  if (context.role === "owner" || context.role === "admin" || context.role === "member") return context.role;
  const member = await store.db
    .selectFrom("member")
    .select("role")
    .where("organizationId", "=", context.orgId)
    .where("userId", "=", context.userId)
    .executeTakeFirst();
  return member ? effectiveRole(member.role) : undefined;
}

/** Better Auth allows several roles per member ("admin,member"); the strongest one is what the member may do. */
export function effectiveRole(roles: string): Role {
  const names = roles.split(",").map((role) => role.trim());
  if (names.includes("owner")) return "owner";
  if (names.includes("admin")) return "admin";
  return "member";
}

/** @throws AppError FORBIDDEN unless the caller is an owner or admin of its org (keys and webhooks). */
export async function requireManager(store: AuthResources, context: AuthContext): Promise<void> {
  if (!isManagerRole(await roleOf(store, context))) throw forbidden("Only owners and admins of the organization may do this");
}

export interface Membership {
  orgId: string;
  role: Role;
  plan: PlanName;
}

/**
 * The org a user acts in: `preferredOrgId` (the session's active organization) when the user is still a member of
 * it, else the oldest membership (the personal org made at sign-up). An org whose settings row is missing (a crash
 * between Better Auth's write and ours) gets it now, on the free plan (its credits held if the user's address is
 * unconfirmed where that is required).
 */
export async function membershipOf(store: AuthResources, userId: string, preferredOrgId?: string | null): Promise<Membership | undefined> {
  const row = await store.db
    .selectFrom("member")
    .leftJoin("orgs", "orgs.id", "member.organizationId")
    .select(["member.organizationId as orgId", "member.role as role", "orgs.plan as plan"])
    .where("member.userId", "=", userId)
    .orderBy(sql<boolean>`${sql.ref("member.organizationId")} = ${preferredOrgId ?? ""}`, "desc")
    .orderBy("member.createdAt", "asc")
    .orderBy("member.organizationId", "asc")
    .limit(1)
    .executeTakeFirst();
  if (!row) return undefined;
  if (row.plan === null) await ensureOrgSettings(store, row.orgId, "free", userId);
  return { orgId: row.orgId, role: effectiveRole(row.role), plan: row.plan ?? "free" };
}

/** The membership of `userId` in exactly `orgId`, if any. */
export async function membershipIn(store: AuthResources, userId: string, orgId: string): Promise<Membership | undefined> {
  const membership = await membershipOf(store, userId, orgId);
  return membership?.orgId === orgId ? membership : undefined;
}
