import { auth } from "@renderbus/contracts";
import { createRpcClient } from "@renderbus/rpc";

/** Asks whether an org can cover an amount; throws INSUFFICIENT_CREDITS (or SERVICE_UNAVAILABLE) when not. */
export interface CreditCheck {
  ensureBalance(orgId: string, credits: number): Promise<void>;
  close(): void;
}

/** The credit check backed by the auth service's `Billing.CheckBalance`. */
export function billingCreditCheck(address: string): CreditCheck {
  const billing = createRpcClient(auth.BillingClient, address);
  return {
    ensureBalance: async (orgId, credits) => {
      await billing.checkBalance({ orgId, credits }, { deadlineMs: 5000 });
    },
    close: () => billing.close(),
  };
}
