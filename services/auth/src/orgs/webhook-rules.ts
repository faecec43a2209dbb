import { webhookUrlProblem } from "@renderbus/address-guard";
import { AppError, planLimit, validationError } from "@renderbus/errors";
import type { Plan } from "@renderbus/plans";

export interface WebhookChange {
  plan: Plan;
  mode: "production" | "development" | "test";
  webhookUrl?: string;
  webhookSecret?: string;
  /** Whether the org has a signing secret stored already (a URL may then change on its own). */
  secretSet?: boolean;
}

/**
 * Decides whether an org may set this webhook target. Pure: the caller has already checked the org and the role.
 * An empty `webhookUrl` clears the target. @returns the AppError to throw, or undefined when allowed.
 */
export function checkWebhookChange({ plan, mode, webhookUrl, webhookSecret, secretSet = false }: WebhookChange): AppError | undefined {
  if (!plan.webhooks) return planLimit(`Webhooks are not included in the ${plan.name} plan; upgrade to starter or above`);
  if (webhookUrl === undefined && webhookSecret === undefined) return validationError("webhookUrl or webhookSecret is required");
  if (webhookUrl !== undefined && webhookUrl !== "") {
    const problem = webhookUrlProblem(webhookUrl, { mode, field: "webhookUrl" });
    if (problem) return validationError(problem);
  }
  if (webhookSecret !== undefined && (webhookSecret.length < 1 || webhookSecret.length > 1000)) {
    return validationError("webhookSecret must be 1-1000 characters");
  }
  // Every delivery is signed (docs/webhooks.md): an endpoint never starts receiving unsigned requests.
  if (webhookUrl !== undefined && webhookUrl !== "" && webhookSecret === undefined && !secretSet) {
    return validationError("webhookSecret is required with the first webhookUrl: every delivery is signed with it");
  }
  return undefined;
}
