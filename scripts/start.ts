/**
 * `npm start`: brings the whole system up on this machine. Uses PostgreSQL, NATS and Redis at DATABASE_URL /
 * NATS_URL / REDIS_URL or on their local ports (default ones, or RENDERBUS_POSTGRES_PORT / RENDERBUS_NATS_PORT /
 * RENDERBUS_REDIS_PORT) when reachable, otherwise starts local servers with data in .data/ (or, when the checkout
 * sits in a private folder the postgres OS user cannot enter, a folder of this checkout's own under
 * /var/lib/renderbus; see chooseServerDataDir); makes sure ffmpeg is present; starts every service from its bundle
 * (built by scripts/bootstrap.mjs; each migrates its own schema) and restarts one that exits, with backoff; seeds a
 * demo org on plan `pro` with an API key; prints the URLs. Ctrl-C stops everything.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { splitNatsUrl } from "../libs/bus/src/nats-credentials.js";
import { devNatsPassword } from "../libs/bus/src/nats-permissions.js";
import { chooseServerDataDir } from "../libs/testing/src/local-data-dir.js";
import { ensureFfmpeg, ensureLocalInfra } from "../libs/testing/src/local-infra.js";
import { findFreePortFrom } from "../libs/testing/src/free-port.js";
import { createSupervisor, OutputTail } from "../libs/testing/src/supervisor.js";
import { SERVICES, startSystem, type ServiceName } from "../libs/testing/src/system.js";

const repoRoot = resolve(import.meta.dirname, "..");
const dataDir = join(repoRoot, ".data");
mkdirSync(dataDir, { recursive: true });
const log = (line: string) => console.log(`[start] ${line}`);

const width = Math.max(...SERVICES.map((s) => s.length));
const colors = [36, 35, 33, 32, 34];
const prefix = (service: ServiceName) => `\x1b[${colors[SERVICES.indexOf(service)]}m${service.padEnd(width)}\x1b[0m |`;

const serverData = await chooseServerDataDir({ checkoutDir: repoRoot });
log(`local servers keep their data in ${serverData.dir} (${serverData.reason})`);
const infra = await ensureLocalInfra({ dataDir: serverData.dir, persistent: true, log });
await ensureFfmpeg(log);
log(`PostgreSQL ${redact(infra.databaseUrl)}, NATS ${redact(infra.natsUrl)}, Redis ${infra.redisUrl}`);

const tails = new Map(SERVICES.map((service) => [service, new OutputTail(20)]));
// Restarts only services it watches, which happens once `system` below is running.
const supervisor = createSupervisor<ServiceName>({
  start: (service) => system.start(service),
  kill: (service) => system.kill(service),
  pid: (service) => system.pid(service),
  tail: (service) => tails.get(service)!.lines(),
  log: (message) => log(message),
});

// The demo's job inputs and webhook receivers are on this machine: lift the SSRF guards, and say so.
log("ALLOW_PRIVATE_ADDRESSES=true: job inputs and webhooks may reach loopback and private addresses (local demo only)");
// The demo has no mail server unless one is given: sign-ups get their free credits without confirming the address.
const emailVerification = process.env.SMTP_URL ? (process.env.EMAIL_VERIFICATION ?? "required") : "off";
if (emailVerification === "off") log("EMAIL_VERIFICATION=off: sign-ups get their free credits without confirming their address (set SMTP_URL to send confirmation links)");
// The worker's /healthz and /readyz (and /metrics): the supervisor counts it up once /readyz answers.
const workerMetricsPort = process.env.WORKER_METRICS_PORT ?? String(await findFreePortFrom(9465));

/**
 * Each service its own internal call keys (`npm run service-keys` prints them as <SERVICE>_SERVICE_TOKEN_KEYS), never
 * one value for all: all five or none (then development keys, or keys made up for this run in production), since a
 * mix of given and made-up keys would refuse every call between the two groups.
 */
function ownServiceTokenKeys(): Partial<Record<ServiceName, Record<string, string>>> {
  const given = SERVICES.flatMap((service) => {
    const keys = process.env[`${service.toUpperCase().replace(/-/g, "_")}_SERVICE_TOKEN_KEYS`];
    return keys ? [[service, { SERVICE_TOKEN_KEYS: keys }] as const] : [];
  });
  if (given.length > 0 && given.length < SERVICES.length) {
    const missing = SERVICES.filter((service) => !given.some(([name]) => name === service));
    console.error(`npm start: set every <SERVICE>_SERVICE_TOKEN_KEYS or none (missing: ${missing.join(", ")}); \`npm run service-keys\` prints all five`);
    process.exit(78);
  }
  return Object.fromEntries(given);
}

const system = await startSystem({
  repoRoot,
  databaseUrl: infra.databaseUrl,
  natsUrl: infra.natsUrl,
  redisUrl: infra.redisUrl,
  gatewayPort: Number(process.env.GATEWAY_PORT ?? 3000),
  outputDir: process.env.OUTPUT_DIR ?? join(dataDir, "outputs"),
  uploadDir: process.env.UPLOAD_DIR ?? join(dataDir, "uploads"),
  env: {
    // The gateway's Prometheus port at its usual place (startSystem otherwise takes a free one, as tests need).
    GATEWAY_METRICS_PORT: "9464",
    WORKER_METRICS_PORT: workerMetricsPort,
    // The gateway's /readyz also reports the worker: one place says whether the whole demo is up.
    READYZ_HTTP_DEPENDENCIES: `http://127.0.0.1:${workerMetricsPort}/readyz`,
    ALLOW_PRIVATE_ADDRESSES: "true",
    ...(Object.fromEntries(Object.entries(process.env).filter(([key]) => /^(MODE|LOG_LEVEL|PUBLIC_URL|PLANS_JSON|OTEL_EXPORTER_OTLP_ENDPOINT|WEBHOOK_.*|OUTPUT_SIGNING_SECRET|SECRETS_ENCRYPTION_KEYS?|BETTER_AUTH_SECRET|GATEWAY_METRICS_PORT|SMTP_URL|EMAIL_FROM)$/.test(key)) as [string, string][])),
    EMAIL_VERIFICATION: emailVerification,
  },
  serviceEnv: ownServiceTokenKeys(),
  onLine: (service, line) => {
    tails.get(service)!.push(line);
    console.log(`${prefix(service)} ${line}`);
  },
  onExit: (service, how) => supervisor.exited(service, how),
  // As in production: plain node on the bundles scripts/bootstrap.mjs has just built.
  runtime: "bundle",
});
for (const service of SERVICES) supervisor.watch(service);
log(`services: ${SERVICES.map((service) => `${service} pid ${system.pid(service)}`).join(", ")}`);
log(`worker health: http://127.0.0.1:${workerMetricsPort}/readyz`);

const demo = await demoCredentials();
console.log(`
  Renderbus is running.

  API        ${system.gatewayUrl}
  Dashboard  ${system.gatewayUrl}/app/
  API docs   ${system.gatewayUrl}/docs
  Metrics    ${system.gatewayMetricsUrl}
  Demo org   ${demo.orgId} (plan pro)
  API key    ${demo.key}

  Try:  curl -X POST ${system.gatewayUrl}/jobs -H "Authorization: Bearer ${demo.key}" \\
          -H "Content-Type: application/json" \\
          -d '{"type":"extract.metadata","inputs":{"source":"https://example.com/video.mp4"}}'

  Job events (examples/job-subscriber, its own read-only NATS user):
        ${subscriberCommand(infra.natsUrl)}

  Ctrl-C stops everything.
`);

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    log("stopping services...");
    supervisor.stop();
    await system.stop();
    await infra.stop();
    process.exit(0);
  });
}

/** The demo org's key, created once with the operator CLI and kept in .data/demo.json. */
async function demoCredentials(): Promise<{ orgId: string; key: string }> {
  const file = join(dataDir, "demo.json");
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, "utf8")) as { orgId: string; key: string };
    const response = await fetch(`${system.gatewayUrl}/me`, { headers: { authorization: `Bearer ${saved.key}` } }).catch(() => undefined);
    if (response?.ok) return saved;
  }
  const { stdout } = await promisify(execFile)(join(repoRoot, "node_modules", ".bin", "tsx"), ["services/auth/src/admin/cli.ts", "org:create", "--name", "Demo", "--plan", "pro"], {
    cwd: repoRoot,
    env: { ...process.env, ...system.env },
  });
  const orgId = /org_[0-9A-Z]+/.exec(stdout)?.[0];
  const key = /rb_[A-Za-z0-9_-]+/.exec(stdout)?.[0];
  if (!orgId || !key) throw new Error(`could not read the demo org from the admin CLI output:\n${stdout}`);
  writeFileSync(file, JSON.stringify({ orgId, key }, null, 2), { mode: 0o600 });
  return { orgId, key };
}

/** The example subscriber's command line: the local server's address with the `job-subscriber` user's password. */
function subscriberCommand(natsUrl: string): string {
  const { url, credentials } = splitNatsUrl(natsUrl);
  const user = credentials ? ` NATS_USER=job-subscriber NATS_PASSWORD=${devNatsPassword("job-subscriber")}` : "";
  return `NATS_URL=${url}${user} npm start -w @renderbus/example-job-subscriber`;
}

function redact(url: string): string {
  return url.replace(/:\/\/([^:@/]+):[^@/]+@/, "://$1:***@");
}
