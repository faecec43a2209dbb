import { runAdminCli } from "../admin/cli.js";

/**
 * Runs one operator CLI command (`npm run admin -- ...`) in the calling process, against the database `env` names,
 * and returns what it printed; a non-zero exit is thrown with what it wrote to stderr. Test and benchmark set-up call
 * it dozens of times per run: a CLI process through tsx cost about 5 s of CPU each, most of it compiling and loading
 * the auth service's code again.
 */
export async function runAdmin(env: Record<string, string>, args: string[]): Promise<string> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runAdminCli(args, { env: { ...process.env, ...env }, out: (line) => out.push(line), err: (line) => err.push(line) });
  if (code !== 0) throw new Error(`admin ${args[0]} failed (exit ${code}): ${err.join("\n")}`);
  return out.join("\n");
}
