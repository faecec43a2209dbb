import { randomBytes } from "node:crypto";
import type { AuthContext } from "./auth-context.js";
import { rpcMethodOf } from "./callers.js";
import { devServiceTokenKeys, parseServiceTokenKeys, SERVICE_NAMES, type ServiceName } from "./service-keys.js";
import { ServiceIdentity, type CallCredentials } from "./service-tokens.js";

/**
 * For tests that drive one service through its gRPC API: signs each call as a caller its method accepts (the gateway
 * for tenant methods, else the first service listed in callers.ts), with the development keys. A production service
 * never holds the other services' keys, so this cannot stand in for them there.
 */
export function allowedCallerCredentials(keys: string = devServiceTokenKeys()): CallCredentials {
  const keyring = parseServiceTokenKeys(keys);
  const identities = new Map<ServiceName, ServiceIdentity>(SERVICE_NAMES.map((name) => [name, new ServiceIdentity(name, keyring)]));
  return {
    tokenFor(audience: ServiceName, method: string, auth?: AuthContext) {
      const rule = rpcMethodOf(method)?.rule;
      const caller: ServiceName = !rule || rule.kind === "tenant" ? "gateway" : rule.services[0]!;
      return identities.get(caller)!.tokenFor(audience, method, auth);
    },
  };
}

/**
 * The identity of `service` for tests: the development keys every process derives outside production, or `keys`
 * (SERVICE_TOKEN_KEYS format; a stand-in serving services of both modes lists both).
 */
export function devServiceIdentity(service: ServiceName, keys: string = devServiceTokenKeys()): ServiceIdentity {
  return new ServiceIdentity(service, parseServiceTokenKeys(keys));
}

let productionTestKeys: string | undefined;

/** Real-looking keys of every service, random per test process: for services a test runs with MODE=production. */
export function productionTestServiceTokenKeys(): string {
  productionTestKeys ??= SERVICE_NAMES.map((service) => `${service}:test:${randomBytes(32).toString("base64url")}`).join(",");
  return productionTestKeys;
}
