import dns, { type LookupAddress } from "node:dns";
import { isIP } from "node:net";
import { BlockedAddressError } from "./blocked-address-error.js";
import { isBlockedAddress, type AddressPolicy } from "./blocked-address.js";

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** The shape of `dns.lookup` that net/tls.connect and undici's connector take as their `lookup` option. */
export type LookupFunction = (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => void;

/**
 * A `lookup` for the connect step that resolves every address of the host and refuses the connection when any of
 * them is blocked, so a name that resolves to a public and a private address cannot be raced. It runs on every
 * connection with the addresses the socket is about to use, so a DNS answer that changes between a check and the
 * connect (rebinding) cannot slip through.
 */
export function createGuardedLookup(isBlocked: AddressPolicy = isBlockedAddress): LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const refused = addresses.find((entry) => isBlocked(entry.address));
      if (refused) return callback(new BlockedAddressError(hostname, refused.address) as NodeJS.ErrnoException, []);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: "ENOTFOUND" }), []);
      if (options.all) return callback(null, addresses);
      callback(null, first.address, first.family);
    });
  };
}

/**
 * net.connect skips `lookup` for IP literals, so a connector checks those itself before connecting: the error to
 * hand to its callback, or undefined when `host` is a name (the lookup judges it) or an allowed literal.
 */
export function refuseBlockedLiteral(host: string, isBlocked: AddressPolicy = isBlockedAddress): BlockedAddressError | undefined {
  const bare = host.replace(/^\[|\]$/g, "");
  if (isIP(bare) === 0 || !isBlocked(bare)) return undefined;
  return new BlockedAddressError(bare);
}

/**
 * Whether every address `host` (a name or an IP literal) resolves to right now is allowed. Used after the fact, when
 * the connection itself was not guarded (ALLOW_PRIVATE_ADDRESSES), to decide whether what came back may be shown;
 * a failed lookup counts as not allowed.
 */
export async function resolvesOnlyToAllowedAddresses(host: string, isBlocked: AddressPolicy = isBlockedAddress): Promise<boolean> {
  const bare = host.replace(/^\[|\]$/g, "");
  if (isIP(bare) !== 0) return !isBlocked(bare);
  try {
    const addresses = await dns.promises.lookup(bare, { all: true });
    return addresses.length > 0 && addresses.every((entry) => !isBlocked(entry.address));
  } catch {
    return false;
  }
}
