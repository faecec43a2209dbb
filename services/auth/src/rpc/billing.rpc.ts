import { insufficientCredits, validationError } from "@renderbus/errors";
import type { auth } from "@renderbus/contracts";
import { planOf } from "@renderbus/plans";
import type { AsyncService } from "@renderbus/rpc";
import type { AuthResources } from "../auth-resources.js";
import { balanceOf, listLedger, reserveCredits, type BalanceView } from "../billing/credit-ledger.js";

/** Why an org whose credits are held is refused: what to do about it (docs/operations.md, "Email"). */
export const HELD_CREDITS_MESSAGE =
  "This organization's free credits arrive once its creator confirms their email address: follow the link sent at sign-up (the dashboard sends another)";

const balanceMessage = (balance: BalanceView): auth.Balance => ({ orgId: balance.orgId, credits: balance.available, reserved: balance.reserved });

/**
 * The gRPC `Billing` service. GetBalance and ListUsage act for the caller's org; CheckBalance (the jobs service) and
 * ReserveCredits (the worker) are internal and name the org in the request: only those services' call tokens are
 * accepted for them (libs/rpc callers.ts).
 */
export function billingRpc(store: AuthResources): AsyncService<auth.BillingServer> {
  return {
    async getBalance(_request, context) {
      const orgId = context.requireAuth().orgId;
      const balance = await balanceOf(store.db, orgId);
      const org = await store.db.selectFrom("orgs").select(["plan", "credits_renew_at", "credits_held_for"]).where("id", "=", orgId).executeTakeFirstOrThrow();
      return {
        ...balanceMessage(balance),
        monthlyCredits: planOf(org.plan, store.plans).monthlyCredits,
        renewsAt: org.credits_renew_at,
        awaitingEmailVerification: org.credits_held_for !== null,
      };
    },
    async listUsage(request, context) {
      const orgId = context.requireAuth().orgId;
      if (request.limit < 0 || request.limit > 100) throw validationError("limit must be 1-100");
      const page = await listLedger(store.db, orgId, request.limit || 50, request.cursor || undefined);
      return {
        entries: page.entries.map((entry) => ({
          id: entry.id,
          kind: entry.kind,
          credits: entry.credits,
          jobId: entry.job_id ?? undefined,
          balanceAfter: entry.balance_after,
          createdAt: entry.created_at,
          description: entry.description,
        })),
        nextCursor: page.nextCursor,
      };
    },
    async checkBalance(request) {
      if (!request.orgId) throw validationError("orgId is required");
      if (request.credits < 0) throw validationError("credits must not be negative");
      const balance = await balanceOf(store.db, request.orgId);
      if (balance.available < request.credits) {
        const org = await store.db.selectFrom("orgs").select("credits_held_for").where("id", "=", request.orgId).executeTakeFirst();
        throw insufficientCredits(org?.credits_held_for ? HELD_CREDITS_MESSAGE : undefined);
      }
      return balanceMessage(balance);
    },
    async reserveCredits(request) {
      if (!request.orgId) throw validationError("orgId is required");
      if (!request.jobId) throw validationError("jobId is required");
      if (!Number.isInteger(request.credits) || request.credits < 0) throw validationError("credits must be a non-negative integer");
      return balanceMessage(await reserveCredits(store.db, request.orgId, request.jobId, request.credits));
    },
  };
}
