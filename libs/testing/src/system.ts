import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { splitNatsUrl } from "../../bus/src/nats-credentials.js";
import { devNatsPassword } from "../../bus/src/nats-permissions.js";
import { newServiceKeySets } from "../../rpc/src/service-key-sets.js";
import { getFreePort } from "./free-port.js";

/** The five services, in start order (dependencies first). */
export const SERVICES = ["auth", "jobs", "webhook-dispatcher", "worker", "gateway"] as const;
export type ServiceName = (typeof SERVICES)[number];

/**
 * The order services start in, a wave at a time, each wave's services together: auth and jobs declare every stream
 * the others consume (Bus.ensureStreams), and the others reach them over gRPC only per request. One after the other,
 * a system took ~7 s to start on an idle machine, and most test files start one. Stopped in the reverse order.
 */
export const START_WAVES: ReadonlyArray<readonly ServiceName[]> = [
  ["auth", "jobs"],
  ["webhook-dispatcher", "worker", "gateway"],
];

/**
 * How a service process runs: `source` through tsx from `services/<name>/src/main.ts` (tests: an edit takes effect
 * without a build), `bundle` as plain node from `services/<name>/dist/main.mjs` built by `scripts/build-services.mjs`
 * (production, `npm start`, the bench: no tsx loader thread with its own V8 isolate, no in-process compiler).
 */
export type ServiceRuntime = "source" | "bundle";

/**
 * The runtime when a caller does not choose one: `RENDERBUS_SERVICE_RUNTIME=bundle` lets a harness (the bench, and
 * the test suite, whose global setup builds the bundles and sets it unless the run chose `source`) switch every system
 * and replica it starts without threading an option through code it does not own.
 */
export function defaultServiceRuntime(): ServiceRuntime {
  return process.env.RENDERBUS_SERVICE_RUNTIME === "bundle" ? "bundle" : "source";
}

/**
 * The old-generation heap limit a bundled service runs with (the image's CMD sets the same). Without it V8 sizes the
 * limit from the machine's memory and lets garbage pile up before collecting: the dispatcher's RSS reached ~300 MB
 * under the webhook benchmark with a live heap far smaller, and ~157 MB with this limit at the same throughput.
 */
export const SERVICE_MAX_OLD_SPACE_MB = 128;

/**
 * The young generation's cap per semi-space. Node 24's V8 (the image's runtime) lets it grow to 64 MB per semi-space
 * whatever the old generation's limit (Node 20 stops at 16 MB): next to a 128 MB old generation, a busy service then
 * copies large survivor sets on every scavenge and runs into the old limit's full collections. Measured on Node 24 in
 * the webhook benchmark: the dispatcher spent 27% of its CPU in the garbage collector and 2.3-3.8 ms of CPU per
 * delivery, against 0.4-0.5 ms with 16 MB and 0.5-0.6 ms with 8 MB; an allocation loop with 60,000 live objects spent
 * 3.4 s in GC without the cap, 1.2-1.5 s with 8 or 16 MB and 2 s with 4 MB. 8 MB, because a grown young generation
 * stays committed when the service goes idle: idle RSS 137-145 MB (auth, gateway) with 8 MB, 151-153 MB with 16 MB.
 */
export const SERVICE_MAX_SEMI_SPACE_MB = 8;

/**
 * V8's worker threads (parallel and concurrent garbage collection, background compilation). Node starts four
 * whatever CPU share the process gets. A service runs under a CPU limit (1 core in deploy/k8s, a fraction per
 * replica when scaled out), which CFS enforces as a quota per 100 ms period shared by all of the process's threads:
 * four GC threads spend it in a burst and the event loop waits out the rest of the period throttled. Measured with
 * dispatcher replicas capped at 0.075 core (bench/findings.md, "Seventeenth round"): 1.4-4 ms of CPU per delivery,
 * varying from round to round and collapsing to 16-20 deliveries/s, against a steady 0.45-0.49 ms with one worker
 * thread (1.76x / 3.76x for 2 / 4 replicas); uncapped, the peers' benchmark did not move (0.72x and 0.67x without,
 * 0.75x and 0.67x with).
 */
export const SERVICE_V8_POOL_SIZE = 1;

/**
 * The node flags every bundled service runs with (the image's CMD, `npm start`, the bench). No `--enable-source-maps`:
 * the bundle's launcher turns source maps on for our own code only (scripts/build-services.mjs, launcherSource).
 */
export const SERVICE_NODE_FLAGS = [
  `--max-old-space-size=${SERVICE_MAX_OLD_SPACE_MB}`,
  `--max-semi-space-size=${SERVICE_MAX_SEMI_SPACE_MB}`,
  `--v8-pool-size=${SERVICE_V8_POOL_SIZE}`,
] as const;

/**
 * The node binary services run on: RENDERBUS_SERVICE_NODE when set (the test run's global setup sets Node 24, the
 * image's runtime), else the node running this process (`npm start`, the bench, which runs itself on Node 24).
 */
export function serviceNode(env: NodeJS.ProcessEnv = process.env): string {
  return env.RENDERBUS_SERVICE_NODE || process.execPath;
}

/**
 * The command that runs `service`: node running the service itself, with tsx as a loader for `source`. `nodeArgs`
 * (e.g. --cpu-prof, which NODE_OPTIONS refuses) go to that node.
 */
export function serviceCommand(repoRoot: string, service: ServiceName, runtime: ServiceRuntime, nodeArgs?: string[]): { command: string; args: string[] } {
  if (runtime === "bundle") {
    const bundle = join(repoRoot, "services", service, "dist", "main.mjs");
    if (!existsSync(bundle)) throw new Error(`${bundle} is missing: run \`node scripts/build-services.mjs\` first`);
    return { command: serviceNode(), args: [...(nodeArgs ?? []), ...SERVICE_NODE_FLAGS, bundle] };
  }
  // tsx as a loader in the service's own process, never tsx's launcher: that runs the service in a child and SIGKILLs
  // it when it does not acknowledge a SIGTERM within about 60 ms, turning a graceful stop on a busy machine into a crash.
  const main = join(repoRoot, "services", service, "src", "main.ts");
  return { command: serviceNode(), args: [...(nodeArgs ?? []), "--import", "tsx", main] };
}

export interface SystemOptions {
  repoRoot: string;
  databaseUrl: string;
  natsUrl: string;
  redisUrl: string;
  /** NATS namespace (tests isolate with it; empty for `npm start`). */
  namespace?: string;
  /** Fixed gateway port (npm start uses 3000); tests take a free one. */
  gatewayPort?: number;
  /**
   * The worker's OUTPUT_DIR. Omitted (tests), the system makes a temporary directory holding it and the uploads
   * directory, and stop() removes that directory: a suite of systems leaves nothing in /tmp.
   */
  outputDir?: string;
  /**
   * The gateway's and worker's shared UPLOAD_DIR (docs/uploads.md); default: `<outputDir>-uploads`, or beside the
   * output in the system's own temporary directory.
   */
  uploadDir?: string;
  /** Extra environment for every service (MODE, retry schedule, ...). */
  env?: Record<string, string>;
  /** Environment of one service only, over `env` (e.g. a worker with an OUTPUT_DIR of its own). */
  serviceEnv?: Partial<Record<ServiceName, Record<string, string>>>;
  /** Each line a service prints, with its name. */
  onLine?: (service: ServiceName, line: string) => void;
  /** A service process exited without this system's stop() or kill() asking it to (npm start's supervisor). */
  onExit?: (service: ServiceName, how: string) => void;
  /** Default: {@link defaultServiceRuntime}. `bundle` needs `node scripts/build-services.mjs` run first. */
  runtime?: ServiceRuntime;
}

export interface RunningSystem {
  gatewayUrl: string;
  /** The gateway's Prometheus `/metrics` (GATEWAY_METRICS_PORT: not on the public port). */
  gatewayMetricsUrl: string;
  /** Starts another gateway replica on a free port (same services, same Redis) and returns its URL. */
  addGateway(): Promise<string>;
  env: Record<string, string>;
  /** SIGKILL one service (a crash). */
  kill(service: ServiceName): Promise<void>;
  /** The pid of the service's current process. */
  pid(service: ServiceName): number | undefined;
  start(service: ServiceName): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Runs every service as its own process (from source or from its bundle, see {@link ServiceRuntime}), so
 * end-to-end and fault tests exercise real process boundaries: gRPC between services, JetStream between stages.
 */
export async function startSystem(options: SystemOptions): Promise<RunningSystem> {
  const gatewayPort = options.gatewayPort ?? (await getFreePort());
  const [authGrpc, jobsGrpc, webhooksGrpc, authHttp, gatewayMetrics] = await Promise.all([getFreePort(), getFreePort(), getFreePort(), getFreePort(), getFreePort()]);
  const publicUrl = `http://127.0.0.1:${gatewayPort}`;
  // Only a directory made here is removed by stop(): a caller's directories (npm start's, the bench's) are its own.
  const ownDir = options.outputDir === undefined ? mkdtempSync(join(tmpdir(), "rb-system-")) : undefined;
  const outputDir = options.outputDir ?? join(ownDir!, "output");
  if (ownDir) mkdirSync(outputDir);
  const env: Record<string, string> = {
    MODE: "development",
    LOG_LEVEL: "info",
    DATABASE_URL: options.databaseUrl,
    NATS_URL: options.natsUrl,
    NATS_NAMESPACE: options.namespace ?? "",
    REDIS_URL: options.redisUrl,
    GATEWAY_PORT: String(gatewayPort),
    // Systems run side by side in tests; each gateway needs its own metrics port (the default 9464 is one per host).
    GATEWAY_METRICS_PORT: String(gatewayMetrics),
    PUBLIC_URL: publicUrl,
    AUTH_GRPC_PORT: String(authGrpc),
    AUTH_GRPC_ADDRESS: `127.0.0.1:${authGrpc}`,
    AUTH_HTTP_PORT: String(authHttp),
    AUTH_HTTP_URL: `http://127.0.0.1:${authHttp}`,
    JOBS_GRPC_PORT: String(jobsGrpc),
    JOBS_GRPC_ADDRESS: `127.0.0.1:${jobsGrpc}`,
    WEBHOOKS_GRPC_PORT: String(webhooksGrpc),
    WEBHOOKS_GRPC_ADDRESS: `127.0.0.1:${webhooksGrpc}`,
    OUTPUT_DIR: outputDir,
    UPLOAD_DIR: options.uploadDir ?? (ownDir ? join(ownDir, "uploads") : `${outputDir}-uploads`),
    // Inputs and webhook receivers of tests (and npm start's demo) are on 127.0.0.1: lift the SSRF guards, except in
    // production mode, whose systems (the security suite) keep them unless a test lifts them itself.
    // Production refuses plaintext gRPC: between processes on loopback, a system states what a mesh would.
    ...(options.env?.MODE === "production" ? { RPC_TRANSPORT: "mesh" } : { ALLOW_PRIVATE_ADDRESSES: "true" }),
    // Test users spend their free credits at once: no confirmation email, unless a test gives an SMTP server.
    ...(options.env?.SMTP_URL ? {} : { EMAIL_VERIFICATION: "off" }),
    // Under vitest, the gateway checks every response it sends against its schema in /openapi.json and answers 500
    // naming the mismatch, so each e2e request also tests the document (services/gateway/src/http/response-check.ts).
    ...(process.env.VITEST ? { GATEWAY_CHECK_RESPONSES: "true" } : {}),
    ...options.env,
  };
  // Production refuses the derived development keys of internal call tokens, and a service holding another's private
  // key: give each service real keys of its own, as a deployment does (its private key, its callers' public keys).
  const ownServiceTokenKeys = env.MODE === "production" && !env.SERVICE_TOKEN_KEYS ? newServiceKeySets("test") : undefined;
  const children = new Map<ServiceName, ChildProcess>();
  /** Processes stop() or kill() ended: their exit is not reported to onExit. */
  const asked = new WeakSet<ChildProcess>();
  const runtime = options.runtime ?? defaultServiceRuntime();

  /** A service's process with the system's environment plus `serviceEnv`, its lines to onLine. */
  const spawnService = (service: ServiceName, serviceEnv: Record<string, string | undefined>) => {
    const { command, args } = serviceCommand(options.repoRoot, service, runtime);
    const keys = ownServiceTokenKeys ? { SERVICE_TOKEN_KEYS: ownServiceTokenKeys[service] } : {};
    const child = spawn(command, args, { cwd: options.repoRoot, env: { ...process.env, ...env, ...keys, ...serviceEnv }, stdio: ["ignore", "pipe", "pipe"] });
    // A binary that cannot be executed (EACCES, ENOENT) is an 'error' event, not an exit: without a listener it would
    // crash the process that starts the system (npm start) instead of failing the start with its reason.
    child.once("error", (error) => spawnErrors.set(child, `${service} could not be started (${command}): ${error.message}`));
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on("line", (line) => options.onLine?.(service, line));
    }
    return child;
  };

  const start = async (service: ServiceName) => {
    const child = spawnService(service, { ...options.serviceEnv?.[service], ...natsUserEnv(options.natsUrl, service) });
    children.set(service, child);
    child.once("exit", (code, signal) => {
      if (!asked.has(child)) options.onExit?.(service, signal ?? `code ${code}`);
    });
    await waitForReady(service, env, child);
  };

  const stopOne = (service: ServiceName, signal: NodeJS.Signals) =>
    new Promise<void>((resolve) => {
      const child = children.get(service);
      if (!child || child.exitCode !== null || child.signalCode !== null) return resolve();
      asked.add(child);
      const timer = signal === "SIGKILL" ? undefined : setTimeout(() => child.kill("SIGKILL"), 10_000);
      child.once("exit", () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill(signal);
    });

  const extraGateways: ChildProcess[] = [];
  const system: RunningSystem = {
    gatewayUrl: publicUrl,
    gatewayMetricsUrl: `http://127.0.0.1:${env.GATEWAY_METRICS_PORT}/metrics`,
    env,
    addGateway: async () => {
      const port = await getFreePort();
      const child = spawnService("gateway", { ...options.serviceEnv?.gateway, ...natsUserEnv(options.natsUrl, "gateway"), GATEWAY_PORT: String(port), GATEWAY_METRICS_PORT: String(await getFreePort()) });
      extraGateways.push(child);
      await waitForReady("gateway", { ...env, PUBLIC_URL: `http://127.0.0.1:${port}` }, child);
      return `http://127.0.0.1:${port}`;
    },
    kill: (service) => stopOne(service, "SIGKILL"),
    pid: (service) => children.get(service)?.pid,
    start,
    stop: async () => {
      process.off("exit", killOnExit);
      for (const child of extraGateways) child.kill("SIGTERM");
      for (const wave of [...START_WAVES].reverse()) await Promise.all(wave.map((service) => stopOne(service, "SIGTERM")));
      if (ownDir) rmSync(ownDir, { recursive: true, force: true });
    },
  };
  // Removed by stop(): a process that starts one system after another (the chaos suite's --repeat) keeps one listener.
  function killOnExit() {
    for (const child of children.values()) child.kill("SIGKILL");
  }
  process.once("exit", killOnExit);
  try {
    for (const wave of START_WAVES) await Promise.all(wave.map(start));
  } catch (error) {
    await system.stop();
    throw error;
  }
  return system;
}

/**
 * A service's own NATS user when `natsUrl` is a local server's (it carries the dev superuser, see local-nats.ts): the
 * service connects as itself, with only its permissions (libs/bus/src/nats-permissions.ts). Any other URL is passed
 * on as given, with NATS_USER / NATS_PASSWORD from the environment if set.
 */
function natsUserEnv(natsUrl: string, service: ServiceName): Record<string, string> {
  const { url, credentials } = splitNatsUrl(natsUrl);
  if (!credentials) return {};
  return { NATS_URL: url, NATS_USER: service, NATS_PASSWORD: devNatsPassword(service) };
}

/** Why a service's process could not be started, by process (its 'error' event). */
const spawnErrors = new WeakMap<ChildProcess, string>();

/** Waits until a service answers: gRPC health for the internal ones, /healthz for the gateway, /readyz for a worker with a metrics port. */
async function waitForReady(service: ServiceName, env: Record<string, string>, child: ChildProcess): Promise<void> {
  const { isRpcServing, loadRpcTransport } = await import("@renderbus/rpc");
  // The services' own transport: with RPC_TRANSPORT=tls they answer a client certificate only.
  const transport = loadRpcTransport(env);
  const deadline = Date.now() + 60_000;
  const check = async (): Promise<boolean> => {
    switch (service) {
      case "auth":
        return isRpcServing(env.AUTH_GRPC_ADDRESS!, 1000, "", transport);
      case "jobs":
        return isRpcServing(env.JOBS_GRPC_ADDRESS!, 1000, "", transport);
      case "webhook-dispatcher":
        return isRpcServing(env.WEBHOOKS_GRPC_ADDRESS!, 1000, "", transport);
      case "gateway":
        return fetch(`${env.PUBLIC_URL}/healthz`).then((r) => r.ok, () => false);
      case "worker":
        // Its /readyz (connected to NATS) when npm start gave it a metrics port; tests go on at once.
        return env.WORKER_METRICS_PORT ? fetch(`http://127.0.0.1:${env.WORKER_METRICS_PORT}/readyz`).then((r) => r.ok, () => false) : true;
    }
  };
  while (Date.now() < deadline) {
    const spawnError = spawnErrors.get(child);
    if (spawnError) throw new Error(spawnError);
    if (child.exitCode !== null) throw new Error(`${service} exited with code ${child.exitCode} during start-up`);
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${service} did not become ready within 60 s`);
}
