import { auth } from "@renderbus/contracts";
import { createRpcClient, type CallCredentials } from "@renderbus/rpc";

/** Asks whether an org can cover an amount; throws INSUFFICIENT_CREDITS (or SERVICE_UNAVAILABLE) when not. */
export interface CreditCheck {
  ensureBalance(orgId: string, credits: number): Promise<void>;
  close(): void;
}

/**
 * Balances that covered a check in the last `ttlMs`, per org. Submission's balance check is advisory (the worker's
 * reservation is what never lets a balance go below zero), so a burst of submissions from one org needs one
 * `CheckBalance` round trip per TTL rather than one each. Only answers that covered are kept: a refused check is
 * asked again next time, so credits granted after a 402 count at once.
 */
export class RecentBalances {
  private readonly available = new Map<string, { credits: number; seenAt: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxOrgs = 10_000,
  ) {}

  covers(orgId: string, credits: number): boolean {
    const seen = this.available.get(orgId);
    return seen !== undefined && this.now() - seen.seenAt < this.ttlMs && seen.credits >= credits;
  }

  remember(orgId: string, credits: number): void {
    if (this.ttlMs <= 0) return;
    if (this.available.size >= this.maxOrgs) this.available.clear(); // bound memory; worst case is a few more checks
    this.available.set(orgId, { credits, seenAt: this.now() });
  }

  forget(orgId: string): void {
    this.available.delete(orgId);
  }
}

/** The credit check backed by the auth service's `Billing.CheckBalance`, with covering answers kept `cacheMs`. */
export function billingCreditCheck(address: string, credentials: CallCredentials, { cacheMs = 0 }: { cacheMs?: number } = {}): CreditCheck {
  const billing = createRpcClient(auth.BillingClient, address, credentials);
  const recent = new RecentBalances(cacheMs);
  return {
    ensureBalance: async (orgId, credits) => {
      if (recent.covers(orgId, credits)) return;
      try {
        const balance = await billing.checkBalance({ orgId, credits }, { deadlineMs: 5000 });
        recent.remember(orgId, balance.credits);
      } catch (error) {
        recent.forget(orgId);
        throw error;
      }
    },
    close: () => billing.close(),
  };
}
