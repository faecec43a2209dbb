/**
 * `npm run service-keys [-- --kid 2027-01]`: prints a fresh SERVICE_TOKEN_KEYS value for each service, as shell
 * assignments (`GATEWAY_SERVICE_TOKEN_KEYS='...'`): each service's own private key and its callers' public keys, no
 * other (docs/operations.md, "Internal authentication"). Give each service only its own line.
 */
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { newServiceKeySets, SERVICE_NAMES } from "@renderbus/rpc";

/** The shell lines for one generation of keys named `kid`. */
export function serviceKeyLines(kid: string): string[] {
  const sets = newServiceKeySets(kid);
  return SERVICE_NAMES.map((service) => `${service.toUpperCase().replace(/-/g, "_")}_SERVICE_TOKEN_KEYS='${sets[service]}'`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { kid: { type: "string", default: new Date().toISOString().slice(0, 7) } }, strict: true });
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(values.kid!)) {
    process.stderr.write("--kid must be 1-64 of A-Z a-z 0-9 . _ -\n");
    process.exit(2);
  }
  for (const line of serviceKeyLines(values.kid!)) process.stdout.write(`${line}\n`);
}
