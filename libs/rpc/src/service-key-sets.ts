import { randomBytes } from "node:crypto";
import { RPC_SERVICES } from "./callers.js";
import { ed25519KeyOf, rawPublicKeyOf, SERVICE_NAMES, type ServiceName } from "./service-keys.js";

/** The services whose calls `service` serves, from the caller rules (a tenant method's caller is the gateway). */
export function callersOf(service: ServiceName): ServiceName[] {
  const callers = new Set<ServiceName>();
  for (const { audience, rules } of RPC_SERVICES) {
    if (audience !== service) continue;
    for (const rule of Object.values(rules)) {
      if (rule.kind === "tenant") callers.add("gateway");
      else for (const caller of rule.services) callers.add(caller);
    }
  }
  return SERVICE_NAMES.filter((name) => callers.has(name) && name !== service);
}

/**
 * A fresh SERVICE_TOKEN_KEYS value for each service: its own private key, then the public keys of the services that
 * call it, nothing else (docs/operations.md, "Internal authentication"). `kid` names this generation of keys.
 */
export function newServiceKeySets(kid: string, seeds: Partial<Record<ServiceName, Buffer>> = {}): Record<ServiceName, string> {
  const seedOf = Object.fromEntries(SERVICE_NAMES.map((service) => [service, seeds[service] ?? randomBytes(32)])) as Record<ServiceName, Buffer>;
  const publicOf = (service: ServiceName) => rawPublicKeyOf(ed25519KeyOf(seedOf[service]).publicKey);
  return Object.fromEntries(
    SERVICE_NAMES.map((service) => [
      service,
      [`${service}:${kid}:private:${seedOf[service].toString("base64url")}`, ...callersOf(service).map((caller) => `${caller}:${kid}:public:${publicOf(caller)}`)].join(","),
    ]),
  ) as Record<ServiceName, string>;
}

/** Every service's private key in one value: what a test stands in for any caller with (never a deployment). */
export function allPrivateServiceKeys(kid: string, seeds: Record<ServiceName, Buffer>): string {
  return SERVICE_NAMES.map((service) => `${service}:${kid}:private:${seeds[service].toString("base64url")}`).join(",");
}
