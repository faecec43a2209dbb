import { createGuardedLookup } from "@renderbus/address-guard";

/** The webhook SSRF guard is the shared one (libs/address-guard): one block list for webhooks and job inputs. */
export { BlockedAddressError, isBlockedAddress, resolvesOnlyToAllowedAddresses } from "@renderbus/address-guard";

/**
 * A `dns.lookup` replacement for the connect step: refuses the connection when any resolved address is blocked.
 * Runs at connect time, so DNS rebinding between a check and the connection is impossible.
 */
export const guardedLookup = createGuardedLookup();
