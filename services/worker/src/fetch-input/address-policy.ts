/** The input-fetch SSRF policy is the shared one (libs/address-guard): one block list for inputs and webhooks. */
export { isBlockedAddress as isForbiddenAddress } from "@renderbus/address-guard";
