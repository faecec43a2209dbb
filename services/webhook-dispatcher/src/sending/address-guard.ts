import { createGuardedLookup, createHostLookup } from "@renderbus/address-guard";

/** The webhook SSRF guard is the shared one (libs/address-guard): one block list for webhooks and job inputs. */
export { BlockedAddressError, isBlockedAddress } from "@renderbus/address-guard";

/**
 * A `dns.lookup` replacement for the connect step: refuses the connection when any resolved address is blocked.
 * Runs at connect time, so DNS rebinding between a check and the connection is impossible.
 */
export const guardedLookup = createGuardedLookup();

/**
 * The lookup with the guard off (ALLOW_PRIVATE_ADDRESSES): the same resolver and DNS timeout, without the check.
 * Node's default lookup would hold a libuv thread per lookup for as long as a silent DNS server takes.
 */
export const unguardedLookup = createHostLookup();
