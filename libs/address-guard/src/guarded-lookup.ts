import type { LookupAddress, LookupOptions } from "node:dns";
import { isIP } from "node:net";
import { BlockedAddressError } from "./blocked-address-error.js";
import { isBlockedAddress, type AddressPolicy } from "./blocked-address.js";
import { systemHostResolver, type HostResolver } from "./host-resolver.js";

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** The shape of `dns.lookup` that net/tls.connect and undici's connector take as their `lookup` option. */
export type LookupFunction = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

/** The address family `dns.lookup` options ask for: 4, 6, or 0 for both. */
function familyOf(options: LookupOptions): number {
  const { family } = options;
  if (family === 4 || family === "IPv4") return 4;
  if (family === 6 || family === "IPv6") return 6;
  return 0;
}

/**
 * A `lookup` for the connect step, through `resolver` (the hosts file, then c-ares within a bounded time, never libuv's
 * thread pool: see createHostResolver), that hands back every address when `all` is set and the first one
 * otherwise. `check` may refuse the answer, which fails the connection with that error.
 */
function lookupThrough(resolver: HostResolver, check: (hostname: string, addresses: LookupAddress[]) => Error | undefined): LookupFunction {
  return (hostname, options, callback) => {
    resolver.resolve(hostname, familyOf(options)).then(
      (addresses) => {
        const refusal = check(hostname, addresses);
        if (refusal) return callback(refusal as NodeJS.ErrnoException, []);
        if (options.all) return callback(null, addresses);
        callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, []),
    );
  };
}

/**
 * A `lookup` for the connect step that resolves every address of the host and refuses the connection when any of
 * them is blocked, so a name that resolves to a public and a private address cannot be raced. It runs on every
 * connection with the addresses the socket is about to use, so a DNS answer that changes between a check and the
 * connect (rebinding) cannot slip through.
 * @param resolver the process's {@link systemHostResolver} unless a test points one at its own DNS server
 */
export function createGuardedLookup(isBlocked: AddressPolicy = isBlockedAddress, resolver: HostResolver = systemHostResolver): LookupFunction {
  return lookupThrough(resolver, (hostname, addresses) => {
    const refused = addresses.find((entry) => isBlocked(entry.address));
    return refused ? new BlockedAddressError(hostname, refused.address) : undefined;
  });
}

/**
 * The unguarded `lookup` for ALLOW_PRIVATE_ADDRESSES: the same resolver and timeout as {@link createGuardedLookup},
 * without the address check. Node's default lookup (getaddrinfo) would bring back the thread-pool stall.
 */
export function createHostLookup(resolver: HostResolver = systemHostResolver): LookupFunction {
  return lookupThrough(resolver, () => undefined);
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
