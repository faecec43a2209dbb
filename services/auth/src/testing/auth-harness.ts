import { Writable } from "node:stream";
import { auth } from "@renderbus/contracts";
import { parseConfig } from "@renderbus/config";
import { allowedCallerCredentials, createRpcClient, devServiceTokenKeys, productionTestCallerKeys, productionTestServiceTokenKeys, type AuthContext, type PromiseClient } from "@renderbus/rpc";
import { createLogger } from "@renderbus/telemetry";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import { authConfigSchema, type AuthConfig } from "../config.js";
import { startAuthService, type AuthService } from "../service.js";
import { createOrgWithKey, openAdminStore, type CreatedOrg } from "../admin/index.js";
import type { AuthResources } from "../auth-resources.js";
import type { PlanName } from "@renderbus/plans";

/** An auth service started in-process on a fresh database and NATS namespace, with clients and captured logs. */
export interface AuthHarness {
  config: AuthConfig;
  service: AuthService;
  store: AuthResources;
  authClient: PromiseClient<auth.AuthClient>;
  billingClient: PromiseClient<auth.BillingClient>;
  /** Every log line the service wrote, raw. */
  logs: string[];
  /** Seeds an org with an API key and returns the key's auth context too. */
  seedOrg(plan: PlanName, name?: string): Promise<CreatedOrg & { context: AuthContext }>;
  stop(): Promise<void>;
}

/** Starts the auth service for one test file. `env` overrides variables (e.g. MODE=production). */
export async function startAuthHarness(label: string, env: Record<string, string> = {}): Promise<AuthHarness> {
  const infra = testInfra();
  const config = parseConfig(authConfigSchema, {
    MODE: "test",
    DATABASE_URL: await createTestDatabase(label),
    NATS_URL: infra.natsUrl,
    NATS_NAMESPACE: testNamespace(label),
    AUTH_GRPC_PORT: "0",
    AUTH_HTTP_PORT: "0",
    LOG_LEVEL: "debug",
    // Tests that sign up and spend the free credits at once; email-verification.int.test.ts requires confirmation.
    EMAIL_VERIFICATION: "off",
    // Production refuses plaintext gRPC: on loopback, a test states what a mesh would (docs/operations.md, RPC_TRANSPORT).
    ...(env.MODE === "production" ? { SERVICE_TOKEN_KEYS: productionTestServiceTokenKeys("auth"), RPC_TRANSPORT: "mesh" } : {}),
    ...env,
  });
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const logger = createLogger({ service: "auth", level: config.LOG_LEVEL, destination });
  const service = await startAuthService(config, { logger });
  const store = await openAdminStore(config);
  const address = `127.0.0.1:${service.grpcPort}`;
  // Calls each method as a caller it accepts (the gateway, the dispatcher, jobs or the worker, see libs/rpc callers.ts).
  const callers = allowedCallerCredentials(config.MODE === "production" ? productionTestCallerKeys() : (config.SERVICE_TOKEN_KEYS ?? devServiceTokenKeys()));
  const authClient = createRpcClient(auth.AuthClient, address, callers);
  const billingClient = createRpcClient(auth.BillingClient, address, callers);
  return {
    config,
    service,
    store,
    authClient,
    billingClient,
    logs,
    async seedOrg(plan, name = `org ${plan}`) {
      const created = await createOrgWithKey(store, { name, plan });
      const context = await authClient.resolveApiKey({ key: created.apiKey });
      return { ...created, context: { userId: context.userId, orgId: context.orgId, plan: context.plan, role: context.role, credential: context.credential } };
    },
    async stop() {
      authClient.close();
      billingClient.close();
      await store.close();
      await service.stop();
    },
  };
}
