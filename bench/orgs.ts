import { runAdminCli } from "../services/auth/src/admin/cli.js";

/** An org made for a benchmark, with its API key. */
export interface BenchOrg {
  orgId: string;
  key: string;
}

/** Runs one operator CLI command (`npm run admin -- ...`) in this process against the system's database. */
async function admin(env: Record<string, string>, args: string[]): Promise<string> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runAdminCli(args, { env: { ...process.env, ...env }, out: (line) => out.push(line), err: (line) => err.push(line) });
  if (code !== 0) throw new Error(`admin ${args[0]} failed (${code}): ${err.join("\n")}`);
  return out.join("\n");
}

/**
 * Creates an org with the operator CLI on `plan`, grants it `credits`, and points its webhook at `webhookUrl` when
 * given (plans with webhooks only).
 */
export async function createBenchOrg(
  env: Record<string, string>,
  { name, plan, credits = 10_000_000, webhookUrl }: { name: string; plan: string; credits?: number; webhookUrl?: string },
): Promise<BenchOrg> {
  const created = JSON.parse(await admin(env, ["org:create", "--name", name, "--plan", plan, "--json"])) as { orgId: string; apiKey: string };
  await admin(env, ["credits:grant", "--org", created.orgId, "--amount", String(credits)]);
  if (webhookUrl) await admin(env, ["org:webhook", "--org", created.orgId, "--url", webhookUrl, "--secret", "bench-webhook-secret-0123456789"]);
  return { orgId: created.orgId, key: created.apiKey };
}
