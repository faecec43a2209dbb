import { parseArgs } from "node:util";
import { parseConfig, ConfigError } from "@renderbus/config";
import { AppError } from "@renderbus/errors";
import { isPlanName, PLAN_NAMES, type PlanName } from "@renderbus/plans";
import { authConfigSchema } from "../config.js";
import { createKeyForOrg, createOrgWithKey, grantOrgCredits, openAdminStore, setOrgWebhook, setPlan, type AdminStore } from "./index.js";
import { reencryptSecrets } from "./reencrypt-secrets.js";

/** Operator CLI: `npm run admin -- <command> [--flags]`. Exit codes: 0 ok, 1 failed, 2 bad arguments, 78 bad config. */

const USAGE = `Usage: npm run admin -- <command> [options]

Commands:
  org:create   --name <name> --plan <${PLAN_NAMES.join("|")}> [--json]   create an org and print its id and a new API key
  org:set-plan --org <org_id> --plan <plan>                             change an org's plan
  credits:grant --org <org_id> --amount <credits>                       add credits to an org's balance
  key:create   --org <org_id> --name <name> [--json]                    create an API key for an org
  org:webhook  --org <org_id> --url <url> --secret <secret>             set an org's webhook target
  secrets:reencrypt                                                     re-encrypt every stored webhook secret with
                                                                        the newest key of SECRETS_ENCRYPTION_KEYS
`;

class UsageError extends Error {}

/** A command that did part of its work: exit code 1 with what is left to do. */
class IncompleteError extends Error {}

type Flags = Record<string, string | boolean | undefined>;

interface Command {
  flags: string[];
  run(store: AdminStore, flags: Flags): Promise<string>;
}

const text = (flags: Flags, name: string): string => {
  const value = flags[name];
  if (typeof value !== "string" || value.trim() === "") throw new UsageError(`--${name} is required`);
  return value;
};

const plan = (flags: Flags): PlanName => {
  const value = text(flags, "plan");
  if (!isPlanName(value)) throw new UsageError(`--plan must be one of ${PLAN_NAMES.join(", ")} (got "${value}")`);
  return value;
};

const orgId = (flags: Flags): string => {
  const value = text(flags, "org");
  if (!value.startsWith("org_")) throw new UsageError(`--org must be an organization id (org_...), got "${value}"`);
  return value;
};

const COMMANDS: Record<string, Command> = {
  "org:create": {
    flags: ["name", "plan", "json"],
    async run(store, flags) {
      const created = await createOrgWithKey(store, { name: text(flags, "name"), plan: plan(flags) });
      if (flags.json) return JSON.stringify({ orgId: created.orgId, apiKeyId: created.apiKeyId, apiKey: created.apiKey });
      return `Organization: ${created.orgId}\nAPI key (shown once, store it now): ${created.apiKey}`;
    },
  },
  "org:set-plan": {
    flags: ["org", "plan"],
    async run(store, flags) {
      const org = await setPlan(store, orgId(flags), plan(flags));
      return `Organization ${org.id} is now on plan ${org.plan}`;
    },
  },
  "credits:grant": {
    flags: ["org", "amount"],
    async run(store, flags) {
      const raw = text(flags, "amount");
      const amount = Number(raw);
      if (!/^\d+$/.test(raw) || !Number.isSafeInteger(amount) || amount <= 0) throw new UsageError(`--amount must be a positive integer (got "${raw}")`);
      const balance = await grantOrgCredits(store, orgId(flags), amount);
      return `Granted ${amount} credits to ${balance.orgId}; available balance: ${balance.available}`;
    },
  },
  "key:create": {
    flags: ["org", "name", "json"],
    async run(store, flags) {
      const created = await createKeyForOrg(store, orgId(flags), text(flags, "name"));
      if (flags.json) return JSON.stringify(created);
      return `API key ${created.apiKeyId} (shown once, store it now): ${created.apiKey}`;
    },
  },
  "org:webhook": {
    flags: ["org", "url", "secret"],
    async run(store, flags) {
      const id = orgId(flags);
      await setOrgWebhook(store, id, text(flags, "url"), text(flags, "secret"));
      return `Webhook of ${id} set to ${text(flags, "url")} (secret stored encrypted)`;
    },
  },
  "secrets:reencrypt": {
    flags: [],
    async run(store) {
      const outcome = await reencryptSecrets(store);
      const summary = `Webhook secrets sealed with key ${outcome.kid}: ${outcome.reencrypted} re-encrypted, ${outcome.alreadyCurrent} already current`;
      const problems = [
        ...(outcome.changedMeanwhile > 0 ? [`${outcome.changedMeanwhile} changed while running: run the command again`] : []),
        ...(outcome.unreadable.length > 0 ? [`no configured key opens the secret of ${outcome.unreadable.join(", ")}: keep the key that sealed it in SECRETS_ENCRYPTION_KEYS`] : []),
      ];
      if (problems.length > 0) throw new IncompleteError(`${summary}; ${problems.join("; ")}`);
      return `${summary}. Keys other than ${outcome.kid} can now be removed.`;
    },
  },
};

/** Runs one CLI invocation; returns the exit code. Output goes to the given writers (tests capture them). */
export interface CliIo {
  env?: NodeJS.ProcessEnv;
  out?: (line: string) => void;
  err?: (line: string) => void;
}

export async function runAdminCli(
  argv: string[],
  {
    env = process.env,
    out = (line: string) => void process.stdout.write(`${line}\n`),
    err = (line: string) => void process.stderr.write(`${line}\n`),
  }: CliIo = {},
): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "help" || name === "--help") {
    (name ? out : err)(USAGE);
    return name ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (!command) {
    err(`Unknown command "${name}".\n\n${USAGE}`);
    return 2;
  }
  let flags: Flags;
  try {
    const options = Object.fromEntries(command.flags.map((flag) => [flag, { type: flag === "json" ? ("boolean" as const) : ("string" as const) }]));
    flags = parseArgs({ args: rest, options, strict: true, allowPositionals: false }).values as Flags;
    for (const flag of command.flags) if (flag !== "json") text(flags, flag);
    // Check values before touching the database, so argument mistakes fail fast with exit code 2.
    if (flags.plan !== undefined) plan(flags);
    if (flags.org !== undefined) orgId(flags);
  } catch (error) {
    err(`${name}: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }

  let config;
  try {
    // Operator commands send no email and the orgs they create never wait for one: SMTP_URL may be left out.
    config = parseConfig(authConfigSchema, { ...env, EMAIL_VERIFICATION: "off" });
  } catch (error) {
    if (error instanceof ConfigError) {
      err(`admin: ${error.message}`);
      return 78;
    }
    throw error;
  }
  const store = await openAdminStore(config);
  try {
    out(await command.run(store, flags));
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      err(`${name}: ${error.message}\n\n${USAGE}`);
      return 2;
    }
    if (error instanceof IncompleteError) {
      err(`${name}: ${error.message}`);
      return 1;
    }
    if (error instanceof AppError) {
      err(`${name}: ${error.code}: ${error.message}`);
      return 1;
    }
    throw error;
  } finally {
    await store.close();
  }
}

// Run when executed as a script (`tsx services/auth/src/admin/cli.ts`), not when imported by tests.
if (import.meta.url === `file://${process.argv[1]}`) {
  runAdminCli(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`admin: ${(error as Error).message ?? String(error)}\n`);
      process.exit(1);
    },
  );
}
