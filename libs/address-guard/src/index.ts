export { isBlockedAddress, embeddedIpv4Addresses, type AddressPolicy } from "./blocked-address.js";
export { BlockedAddressError } from "./blocked-address-error.js";
export { createGuardedLookup, createHostLookup, refuseBlockedLiteral, type LookupFunction } from "./guarded-lookup.js";
export { createHostResolver, systemHostResolver, DNS_TIMEOUT_MS, type HostResolver, type HostResolverOptions } from "./host-resolver.js";
export { webhookUrlProblem } from "./webhook-url.js";
