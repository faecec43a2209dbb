import type { LookupAddress } from "node:dns";
import { readFile } from "node:fs/promises";
import { isIP } from "node:net";

/** Where the operating system keeps its static names (`localhost`, Docker's `host.docker.internal`, k8s hostAliases). */
export const SYSTEM_HOSTS_FILE = "/etc/hosts";

/**
 * The addresses a hosts file gives `hostname` (case-insensitive), in file order; empty when it names none or cannot be
 * read. Read on every call: it is a small local file, and Docker and Kubernetes rewrite it after the process starts.
 */
export async function hostsFileAddresses(hostname: string, path: string = SYSTEM_HOSTS_FILE): Promise<LookupAddress[]> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return [];
  }
  const wanted = hostname.toLowerCase().replace(/\.$/, "");
  const addresses: LookupAddress[] = [];
  for (const line of text.split("\n")) {
    const [address, ...names] = line.replace(/#.*/, "").trim().split(/\s+/);
    const family = isIP(address ?? "");
    if (family === 0 || !names.some((name) => name.toLowerCase() === wanted)) continue;
    if (!addresses.some((known) => known.address === address)) addresses.push({ address: address!, family });
  }
  return addresses;
}
