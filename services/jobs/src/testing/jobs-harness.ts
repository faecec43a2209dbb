import { Bus, STREAMS, type BusMessage, type ConsumerHandle, type StreamSpec } from "@renderbus/bus";
import { auth, jobs } from "@renderbus/contracts";
import { insufficientCredits } from "@renderbus/errors";
import { newId } from "@renderbus/ids";
import { allowedCallerCredentials, createRpcClient, createRpcServer, devServiceIdentity, type AuthContext, type PromiseClient, type RpcServer } from "@renderbus/rpc";
import { createLogger } from "@renderbus/telemetry";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import { jobsConfigSchema } from "../config.js";
import { startJobsService, type JobsService } from "../service.js";

/**
 * Stands in for the auth service's Billing part in these tests (an outside dependency here): a real gRPC server
 * answering CheckBalance from an in-test balance per org. The end-to-end test with the real auth service lives
 * elsewhere.
 */
export interface TestBilling {
  address: string;
  /** Balance per org; orgs not listed have `defaultBalance`. */
  balances: Map<string, number>;
  defaultBalance: number;
  /** Delay of each CheckBalance answer, to hold a request in flight. */
  delayMs: number;
  checks: number;
  stop(): Promise<void>;
}

export async function startTestBilling(): Promise<TestBilling> {
  const server: RpcServer = createRpcServer(devServiceIdentity("auth"));
  const billing: TestBilling = {
    address: "",
    balances: new Map(),
    defaultBalance: 1000,
    delayMs: 0,
    checks: 0,
    stop: () => server.shutdown(100),
  };
  const balanceOf = (orgId: string) => billing.balances.get(orgId) ?? billing.defaultBalance;
  server.add<auth.BillingServer>(auth.BillingService, {
    checkBalance: async ({ orgId, credits }) => {
      billing.checks += 1;
      if (billing.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, billing.delayMs));
      if (balanceOf(orgId) < credits) throw insufficientCredits();
      return { orgId, credits: balanceOf(orgId), reserved: 0 };
    },
    getBalance: async () => ({ orgId: "", credits: 0, reserved: 0 }),
    listUsage: async () => ({ entries: [] }),
    reserveCredits: async ({ orgId }) => ({ orgId, credits: balanceOf(orgId), reserved: 0 }),
  });
  const port = await server.listen(0);
  billing.address = `127.0.0.1:${port}`;
  return billing;
}

/** Everything an integration test of the jobs service needs: the service in-process, a client, a bus, billing. */
export interface JobsHarness {
  service: JobsService;
  /** A second replica on the same database and namespace, when asked for. */
  replica?: JobsService;
  client: PromiseClient<jobs.JobsClient>;
  replicaClient?: PromiseClient<jobs.JobsClient>;
  billing: TestBilling;
  bus: Bus;
  namespace: string;
  /** Collects messages of a stream (subject filter) from now on, through a durable consumer of the test's own. */
  collect<T = unknown>(stream: StreamSpec, filterSubject: string): Promise<Collector<T>>;
  /** Waits until the relay published everything and the scheduler is idle. */
  settle(): Promise<void>;
  stop(): Promise<void>;
}

export interface Collector<T> {
  messages: BusMessage<T>[];
  /** Resolves once at least `count` messages matching `predicate` arrived (or rejects after `timeoutMs`). */
  waitFor(count: number, predicate?: (message: BusMessage<T>) => boolean, timeoutMs?: number): Promise<BusMessage<T>[]>;
  stop(): Promise<void>;
}

export async function startJobsHarness(label: string, { replicas = 1, env = {} }: { replicas?: number; env?: Record<string, string> } = {}): Promise<JobsHarness> {
  const { natsUrl } = testInfra();
  const databaseUrl = await createTestDatabase(label);
  const namespace = testNamespace(label);
  const billing = await startTestBilling();
  const config = jobsConfigSchema.parse({
    DATABASE_URL: databaseUrl,
    NATS_URL: natsUrl,
    NATS_NAMESPACE: namespace,
    JOBS_GRPC_PORT: "0",
    AUTH_GRPC_ADDRESS: billing.address,
    LOG_LEVEL: "silent",
    ...env,
  });
  const logger = createLogger({ service: "jobs", level: process.env.TEST_LOG_LEVEL ?? "silent" });
  const service = await startJobsService(config, { logger });
  const replica = replicas > 1 ? await startJobsService(config, { logger }) : undefined;
  // Calls each method as a caller it accepts: tenant methods as the gateway, worker reports as the worker.
  const client = createRpcClient(jobs.JobsClient, `127.0.0.1:${service.grpcPort}`, allowedCallerCredentials());
  const replicaClient = replica ? createRpcClient(jobs.JobsClient, `127.0.0.1:${replica.grpcPort}`, allowedCallerCredentials()) : undefined;
  const bus = await Bus.connect({ url: natsUrl, name: `${label}-test`, namespace });
  const collectors: Collector<unknown>[] = [];

  const collect = async <T>(stream: StreamSpec, filterSubject: string): Promise<Collector<T>> => {
    const messages: BusMessage<T>[] = [];
    const waiters = new Set<() => void>();
    const handle: ConsumerHandle = await bus.consume<T>({
      stream,
      durable: `test-${Math.random().toString(36).slice(2, 10)}`,
      filterSubjects: [filterSubject],
      deliverPolicy: "all",
      concurrency: 16,
      handler: async (message) => {
        messages.push(message);
        for (const wake of waiters) wake();
      },
    });
    const collector: Collector<T> = {
      messages,
      waitFor: (count, predicate = () => true, timeoutMs = 10_000) =>
        new Promise((resolve, reject) => {
          const check = () => {
            const matching = messages.filter(predicate);
            if (matching.length >= count) {
              waiters.delete(check);
              clearTimeout(timer);
              resolve(matching);
            }
          };
          const timer = setTimeout(() => {
            waiters.delete(check);
            reject(new Error(`timed out waiting for ${count} messages on ${filterSubject} (have ${messages.filter(predicate).length})`));
          }, timeoutMs);
          waiters.add(check);
          check();
        }),
      stop: () => handle.stop(),
    };
    collectors.push(collector as Collector<unknown>);
    return collector;
  };

  return {
    service,
    replica,
    client,
    replicaClient,
    billing,
    bus,
    namespace,
    collect,
    settle: async () => {
      for (const instance of [service, replica]) {
        if (!instance) continue;
        await instance.scheduler.idle();
        await instance.relay.drained();
      }
    },
    stop: async () => {
      client.close();
      replicaClient?.close();
      await Promise.all(collectors.map((collector) => collector.stop()));
      await bus.close();
      await replica?.stop();
      await service.stop();
      await billing.stop();
    },
  };
}

/** A fresh org's auth context, as the gateway would send it. */
export function testAuth(plan = "free"): AuthContext {
  return { userId: newId("usr"), orgId: newId("org"), plan };
}

/** A valid spec of a job type every plan may run. */
export function metadataJob(source = "https://example.com/video.mp4"): jobs.JobSpec {
  return { type: "extract.metadata", inputs: { source }, params: {}, metadata: {} };
}

export { STREAMS };
