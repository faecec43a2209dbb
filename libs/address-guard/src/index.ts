export { isBlockedAddress, embeddedIpv4Addresses, type AddressPolicy } from "./blocked-address.js";
export { BlockedAddressError } from "./blocked-address-error.js";
export { createGuardedLookup, refuseBlockedLiteral, resolvesOnlyToAllowedAddresses, type LookupFunction } from "./guarded-lookup.js";
export { webhookUrlProblem } from "./webhook-url.js";
