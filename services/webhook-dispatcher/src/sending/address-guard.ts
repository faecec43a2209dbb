import { BlockList, isIP } from "node:net";
import dns from "node:dns";

/**
 * Addresses a webhook may never reach in production: loopback, private, shared (CGNAT), link-local (incl. the
 * 169.254.169.254 / fd00:ec2::254 metadata endpoints), unspecified, multicast and reserved ranges. IPv4-mapped IPv6
 * (`::ffff:127.0.0.1`) is matched against the IPv4 ranges by BlockList itself.
 */
const blocked = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  blocked.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["64:ff9b::", 96],
  ["64:ff9b:1::", 48],
  ["100::", 64],
  ["2001:db8::", 32],
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8],
] as const) {
  blocked.addSubnet(network, prefix, "ipv6");
}

/** True when `address` (an IP literal) lies in a range production webhooks may not reach. */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  return blocked.check(address, family === 4 ? "ipv4" : "ipv6");
}

/** Thrown (through the connect path) when a webhook URL resolves to a refused address. */
export class BlockedAddressError extends Error {
  override readonly name = "BlockedAddressError";
  readonly code = "WEBHOOK_ADDRESS_BLOCKED";
  constructor(readonly address: string) {
    super(`refused to connect to a private, loopback or link-local address (${address})`);
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `dns.lookup` replacement for the connect step: resolves every address of the host and refuses the connection
 * when any of them is blocked, so a name that resolves to a public and a private address cannot be raced.
 * Runs at connect time, so DNS rebinding between a check and the connection is impossible.
 */
export function guardedLookup(hostname: string, options: dns.LookupOptions, callback: LookupCallback): void {
  dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    const refused = addresses.find((entry) => isBlockedAddress(entry.address));
    if (refused) return callback(new BlockedAddressError(refused.address) as NodeJS.ErrnoException, []);
    if (options.all) return callback(null, addresses);
    const first = addresses[0];
    if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: "ENOTFOUND" }), []);
    callback(null, first.address, first.family);
  });
}
