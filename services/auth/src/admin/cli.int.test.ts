import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAuthHarness, type AuthHarness } from "../testing/auth-harness.js";
import { runAdminCli } from "./cli.js";

const run = promisify(execFile);
const CLI = fileURLToPath(new URL("./cli.ts", import.meta.url));

async function cli(harness: AuthHarness, args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runAdminCli(args, {
    env: { DATABASE_URL: harness.config.DATABASE_URL, MODE: "test" },
    out: (line) => out.push(line),
    err: (line) => err.push(line),
  });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

describe("operator CLI", () => {
  let harness: AuthHarness;
  beforeAll(async () => {
    harness = await startAuthHarness("cli");
  });
  afterAll(() => harness?.stop());

  it("org:create prints the org id and an API key that resolves to that org", async () => {
    const { stdout } = await run("npx", ["tsx", CLI, "org:create", "--name", "Acme", "--plan", "pro"], {
      env: { ...process.env, DATABASE_URL: harness.config.DATABASE_URL, MODE: "test" },
    });
    const orgId = /org_[0-9A-Z]{26}/.exec(stdout)?.[0];
    const key = /rb_[A-Za-z0-9_-]{43}/.exec(stdout)?.[0];
    expect(orgId).toBeDefined();
    expect(key).toBeDefined();
    const context = await harness.authClient.resolveApiKey({ key: key! });
    expect(context).toMatchObject({ orgId, plan: "pro", credential: "api_key" });
    expect((await harness.billingClient.getBalance({}, { auth: context })).credits).toBe(4900);
  });

  it("sets plans, grants credits, creates keys and sets webhooks", async () => {
    const created = await cli(harness, ["org:create", "--name", "Beta", "--plan", "free", "--json"]);
    expect(created.code).toBe(0);
    const { orgId, apiKey } = JSON.parse(created.out) as { orgId: string; apiKey: string };
    expect((await cli(harness, ["org:webhook", "--org", orgId, "--url", "http://127.0.0.1:1/h", "--secret", "s3cret"])).err).toContain("PLAN_LIMIT");
    expect((await cli(harness, ["org:set-plan", "--org", orgId, "--plan", "starter"])).code).toBe(0);
    // The upgrade topped the balance up to starter's 1,900 monthly credits at once.
    expect((await cli(harness, ["credits:grant", "--org", orgId, "--amount", "100"])).out).toContain("available balance: 2000");
    const webhook = await cli(harness, ["org:webhook", "--org", orgId, "--url", "http://127.0.0.1:1/h", "--secret", "s3cret"]);
    expect(webhook.code).toBe(0);
    expect(webhook.out).not.toContain("s3cret");
    expect(await harness.authClient.getWebhookTarget({ orgId })).toMatchObject({ plan: "starter", url: "http://127.0.0.1:1/h", secret: "s3cret" });
    const key = await cli(harness, ["key:create", "--org", orgId, "--name", "second"]);
    const second = /rb_[A-Za-z0-9_-]{43}/.exec(key.out)?.[0];
    expect((await harness.authClient.resolveApiKey({ key: second! })).orgId).toBe(orgId);
    expect((await harness.authClient.resolveApiKey({ key: apiKey })).plan).toBe("starter");
  });

  it("exits with code 2 and a clear message for bad arguments", async () => {
    const cases: [string[], string][] = [
      [[], "Usage"],
      [["org:explode"], 'Unknown command "org:explode"'],
      [["org:create", "--name", "X"], "--plan is required"],
      [["org:create", "--name", "X", "--plan", "gold"], "--plan must be one of free, starter, pro, scale"],
      [["org:create", "--name", "X", "--plan", "pro", "--color", "red"], "--color"],
      [["credits:grant", "--org", "org_X", "--amount", "1.5"], "--amount must be a positive integer"],
      [["credits:grant", "--org", "org_X", "--amount=-5"], "--amount must be a positive integer"],
      [["org:set-plan", "--org", "acme", "--plan", "pro"], "--org must be an organization id"],
    ];
    for (const [args, message] of cases) {
      const result = await cli(harness, args);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.err).toContain(message);
    }
    const unknownOrg = await cli(harness, ["org:set-plan", "--org", "org_01J00000000000000000000000", "--plan", "pro"]);
    expect(unknownOrg).toMatchObject({ code: 1 });
    expect(unknownOrg.err).toContain("NOT_FOUND");
  });
});
