import { randomBytes } from "node:crypto";
import type { AuthContext } from "./auth-context.js";
import { rpcMethodOf } from "./callers.js";
import { allPrivateServiceKeys, newServiceKeySets } from "./service-key-sets.js";
import { devServiceTokenKeys, parseServiceTokenKeys, SERVICE_NAMES, type ServiceName } from "./service-keys.js";
import { PLAINTEXT_RPC_TRANSPORT, type RpcTransport } from "./rpc-transport.js";
import { ServiceIdentity, type CallCredentials } from "./service-tokens.js";

/**
 * For tests that drive one service through its gRPC API: signs each call as a caller its method accepts (the gateway
 * for tenant methods, else the first service listed in callers.ts), with the development keys or `keys` (which must
 * hold those callers' private keys: {@link productionTestCallerKeys} for a service running with MODE=production),
 * connecting with `transport` (plaintext unless the service under test runs with RPC_TRANSPORT=tls).
 */
export function allowedCallerCredentials(keys: string = devServiceTokenKeys(), transport: RpcTransport = PLAINTEXT_RPC_TRANSPORT): CallCredentials {
  const keyring = parseServiceTokenKeys(keys);
  const identities = new Map<ServiceName, ServiceIdentity>(SERVICE_NAMES.map((name) => [name, new ServiceIdentity(name, keyring)]));
  return {
    transport,
    tokenFor(audience: ServiceName, method: string, auth?: AuthContext) {
      const rule = rpcMethodOf(method)?.rule;
      const caller: ServiceName = !rule || rule.kind === "tenant" ? "gateway" : rule.services[0]!;
      return identities.get(caller)!.tokenFor(audience, method, auth);
    },
  };
}

/**
 * The identity of `service` for tests: the development keys every process derives outside production, or `keys`
 * (SERVICE_TOKEN_KEYS format; a stand-in serving services of both modes lists both), connecting with `transport`.
 */
export function devServiceIdentity(service: ServiceName, keys: string = devServiceTokenKeys(), transport: RpcTransport = PLAINTEXT_RPC_TRANSPORT): ServiceIdentity {
  return new ServiceIdentity(service, parseServiceTokenKeys(keys), transport);
}

let productionTestSeeds: Record<ServiceName, Buffer> | undefined;
const testSeeds = () => (productionTestSeeds ??= Object.fromEntries(SERVICE_NAMES.map((service) => [service, randomBytes(32)])) as Record<ServiceName, Buffer>);

/**
 * SERVICE_TOKEN_KEYS of `service` for a test running it with MODE=production: its own private key and its callers'
 * public keys, as in a deployment; random per test process.
 */
export function productionTestServiceTokenKeys(service: ServiceName): string {
  return newServiceKeySets("test", testSeeds())[service];
}

/** The private keys of every service of {@link productionTestServiceTokenKeys}: for a test's stand-in callers. */
export function productionTestCallerKeys(): string {
  return allPrivateServiceKeys("test", testSeeds());
}
