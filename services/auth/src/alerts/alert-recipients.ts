import type { Kysely } from "kysely";
import { isManagerRole } from "@renderbus/rpc";
import type { AuthTables } from "../database.js";
import { effectiveRole } from "../orgs/membership.js";

export interface AlertRecipient {
  userId: string;
  email: string;
}

/**
 * Who is told about an org's operational problems: its owners and admins whose address is confirmed. An unconfirmed
 * address may belong to someone else (an account made with it), so it is never mailed, as with invitations. Nor is
 * the service user that owns an operator-created org (admin/index.ts): its address is under `.invalid`, which no
 * mail server delivers.
 */
export async function alertRecipients(db: Kysely<AuthTables>, orgId: string): Promise<{ orgName: string; recipients: AlertRecipient[] } | undefined> {
  const org = await db.selectFrom("organization").select("name").where("id", "=", orgId).executeTakeFirst();
  if (!org) return undefined;
  const members = await db
    .selectFrom("member")
    .innerJoin("user", "user.id", "member.userId")
    .select(["user.id as userId", "user.email as email", "member.role as role"])
    .where("member.organizationId", "=", orgId)
    .where("user.emailVerified", "=", true)
    .where("user.email", "not like", "%.invalid")
    .orderBy("member.createdAt")
    .execute();
  return {
    orgName: org.name,
    recipients: members.filter((member) => isManagerRole(effectiveRole(member.role))).map(({ userId, email }) => ({ userId, email })),
  };
}
