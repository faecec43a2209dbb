import { runAdmin } from "../services/auth/src/testing/run-admin.js";

/** An org made for a benchmark, with its API key. */
export interface BenchOrg {
  orgId: string;
  key: string;
}

/**
 * Creates an org with the operator CLI on `plan`, grants it `credits`, and points its webhook at `webhookUrl` when
 * given (plans with webhooks only).
 */
export async function createBenchOrg(
  env: Record<string, string>,
  { name, plan, credits = 10_000_000, webhookUrl }: { name: string; plan: string; credits?: number; webhookUrl?: string },
): Promise<BenchOrg> {
  const created = JSON.parse(await runAdmin(env, ["org:create", "--name", name, "--plan", plan, "--json"])) as { orgId: string; apiKey: string };
  await runAdmin(env, ["credits:grant", "--org", created.orgId, "--amount", String(credits)]);
  if (webhookUrl) await runAdmin(env, ["org:webhook", "--org", created.orgId, "--url", webhookUrl, "--secret", "bench-webhook-secret-0123456789"]);
  return { orgId: created.orgId, key: created.apiKey };
}
