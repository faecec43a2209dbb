import { createAuthMiddleware } from "better-auth/api";
import type { AuthResources } from "../auth-resources.js";
import { announceMembershipChanged, revokeKeysOfMember } from "./api-keys.service.js";

/**
 * What the organization plugin's member hooks do to API keys: a removed member's keys are revoked (announced, so
 * every gateway refuses them), and a role change makes gateways drop the org's cached keys so they act with the
 * creator's new role. Key resolution checks membership and role itself; these close the gateway cache's window.
 */
export function memberKeyHooks(store: AuthResources) {
  return {
    afterRemoveMember: async ({ member, organization }: { member: { userId: string }; organization: { id: string } }) => {
      await revokeKeysOfMember(store, organization.id, member.userId);
    },
    afterUpdateMemberRole: async ({ organization }: { organization: { id: string } }) => {
      await announceMembershipChanged(store, organization.id);
    },
  };
}

/**
 * Better Auth after-hook for `/organization/leave`, which runs no organization hook: a member who leaves has their
 * keys revoked like a removed one.
 */
export function revokeKeysOfLeavingMember(store: AuthResources) {
  return createAuthMiddleware(async (ctx) => {
    if (ctx.path !== "/organization/leave") return;
    const left = ctx.context.returned as { userId?: unknown; organizationId?: unknown } | undefined;
    if (!left || typeof left.userId !== "string" || typeof left.organizationId !== "string") return;
    await revokeKeysOfMember(store, left.organizationId, left.userId);
  });
}
