/**
 * `npm run soak`: a bounded soak run. Starts the whole system (own database and NATS namespace), submits jobs with
 * webhooks at a steady rate, and every 15 s samples each service process's resident memory and open sockets. At the
 * end it prints the samples and fails (exit 1) on any error (a refused submission, a failed job, a delivery that did
 * not succeed) or on a clear growth trend in memory or connections. Not part of CI.
 *
 *   npm run soak                            # 10 minutes, 2 jobs/s
 *   npm run soak -- --minutes 3 --rate 4
 *
 * Infrastructure from DATABASE_URL / NATS_URL / REDIS_URL, else the usual local defaults.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { SERVICES, startSystem, type ServiceName } from "@renderbus/testing";
import { createOrg, makeTestVideo, repoRoot, startFileServer, startReceiver } from "../e2e/helpers.js";

const { values } = parseArgs({ options: { minutes: { type: "string", default: "10" }, rate: { type: "string", default: "2" }, sample: { type: "string", default: "15" } } });
const minutes = Number(values.minutes);
const rate = Number(values.rate);
const sampleSeconds = Number(values.sample);
if (!(minutes > 0 && minutes <= 10)) throw new Error("--minutes must be in (0, 10]: the soak is bounded");
const log = (line: string) => console.log(`${new Date().toISOString().slice(11, 19)} ${line}`);

const databaseUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const database = `rb_soak_${randomBytes(4).toString("hex")}`;
const admin = new pg.Client({ connectionString: databaseUrl });
await admin.connect();
await admin.query(`create database ${database}`);
await admin.end();
const soakDatabaseUrl = Object.assign(new URL(databaseUrl), { pathname: `/${database}` }).toString();

const media = await startFileServer(await makeTestVideo());
const receiver = await startReceiver(() => 200);
const system = await startSystem({
  repoRoot,
  databaseUrl: soakDatabaseUrl,
  natsUrl: process.env.NATS_URL ?? "nats://127.0.0.1:4222",
  redisUrl: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
  namespace: `soak${randomBytes(4).toString("hex")}`,
  outputDir: mkdtempSync(join(tmpdir(), "rb-soak-out-")),
  env: { MODE: "test", LOG_LEVEL: "warn", IP_REQUESTS_PER_MINUTE: "1000000", PLANS_JSON: JSON.stringify({ scale: { requestsPerMinute: 1_000_000, monthlyCredits: 100_000_000 } }) },
});
const org = await createOrg(system.env, "scale", "Soak");
const headers = { authorization: `Bearer ${org.key}`, "content-type": "application/json" };
await fetch(`${system.gatewayUrl}/orgs/${org.orgId}`, { method: "PATCH", headers, body: JSON.stringify({ webhookUrl: receiver.url, webhookSecret: "whsec_soak_secret" }) });

/** The node process running each service: the one whose environment names this run's database. */
function servicePids(): Map<ServiceName, number> {
  const pids = new Map<ServiceName, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      const service = SERVICES.find((name) => cmdline.includes(`services/${name}/src/main.ts`));
      if (!service || !cmdline.includes("loader.mjs")) continue;
      if (readFileSync(`/proc/${entry}/environ`, "utf8").includes(database)) pids.set(service, Number(entry));
    } catch {
      // a process that just ended
    }
  }
  return pids;
}

interface Sample {
  at: number;
  rssMb: Record<string, number>;
  sockets: Record<string, number>;
}

function sample(pids: Map<ServiceName, number>): Sample {
  const rssMb: Record<string, number> = {};
  const sockets: Record<string, number> = {};
  for (const [service, pid] of pids) {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    rssMb[service] = Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
    sockets[service] = readdirSync(`/proc/${pid}/fd`).filter((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith("socket:");
      } catch {
        return false;
      }
    }).length;
  }
  return { at: Date.now(), rssMb, sockets };
}

/** Least-squares slope of `values` over `times` (per ms). */
function slope(times: number[], values: number[]): number {
  const n = times.length;
  const meanT = times.reduce((a, b) => a + b, 0) / n;
  const meanV = values.reduce((a, b) => a + b, 0) / n;
  let numerator = 0;
  let denominator = 0;
  for (let i = 0; i < n; i += 1) {
    numerator += (times[i]! - meanT) * (values[i]! - meanV);
    denominator += (times[i]! - meanT) ** 2;
  }
  return denominator === 0 ? 0 : numerator / denominator;
}

const pids = servicePids();
if (pids.size !== SERVICES.length) throw new Error(`found ${pids.size} of ${SERVICES.length} service processes`);
log(`soak: ${minutes} min at ${rate} jobs/s against ${system.gatewayUrl}`);

let submitted = 0;
let refused = 0;
const endAt = Date.now() + minutes * 60_000;
const samples: Sample[] = [sample(pids)];
const sampler = setInterval(() => samples.push(sample(pids)), sampleSeconds * 1000);
for (let index = 0; Date.now() < endAt; index += 1) {
  const payload = index % 4 === 3 ? { type: "extract.metadata", inputs: { source: media.url("clip.mp4") } } : { type: "qr.generate", params: { content: `soak ${index}` } };
  void fetch(`${system.gatewayUrl}/jobs`, { method: "POST", headers, body: JSON.stringify(payload), signal: AbortSignal.timeout(30_000) })
    .then(async (response) => {
      await response.arrayBuffer();
      if (response.status === 201) submitted += 1;
      else refused += 1;
    })
    .catch(() => (refused += 1));
  await new Promise((done) => setTimeout(done, 1000 / rate));
}
clearInterval(sampler);
samples.push(sample(pids));

// Let the last jobs and deliveries finish, then count what went wrong.
const db = new pg.Pool({ connectionString: soakDatabaseUrl, max: 2 });
const count = async (text: string) => Number((await db.query<{ n: string }>(text, [org.orgId])).rows[0]!.n);
const drainUntil = Date.now() + 120_000;
while (Date.now() < drainUntil) {
  const open = (await count(`select count(*) as n from jobs.job_views where org_id = $1 and status not in ('completed', 'failed', 'cancelled')`)) + (await count(`select count(*) as n from dispatcher.deliveries where org_id = $1 and status = 'pending'`));
  if (open === 0) break;
  await new Promise((done) => setTimeout(done, 1000));
}
const failedJobs = await count(`select count(*) as n from jobs.job_views where org_id = $1 and status <> 'completed'`);
const badDeliveries = await count(`select count(*) as n from dispatcher.deliveries where org_id = $1 and status <> 'succeeded'`);
const deliveries = await count(`select count(*) as n from dispatcher.deliveries where org_id = $1`);
await db.end();

const services = [...pids.keys()];
const header = ["t (s)", ...services.map((service) => `${service} MB/sockets`)];
const rows = samples.map((entry) => [String(Math.round((entry.at - samples[0]!.at) / 1000)), ...services.map((service) => `${entry.rssMb[service]}/${entry.sockets[service]}`)]);
const widths = header.map((_, column) => Math.max(...[header, ...rows].map((row) => row[column]!.length)));
console.log(`\n${[header, ...rows].map((row) => row.map((cell, column) => cell.padStart(widths[column]!)).join("  ")).join("\n")}\n`);

// Growth: the trend over the run after a warm-up fifth, projected over that span, against a floor and a fraction.
const problems: string[] = [];
const steady = samples.slice(Math.floor(samples.length / 5));
if (steady.length >= 4) {
  const times = steady.map((entry) => entry.at);
  const span = times.at(-1)! - times[0]!;
  for (const service of services) {
    const rss = steady.map((entry) => entry.rssMb[service]!);
    const rssGrowth = slope(times, rss) * span;
    if (rssGrowth > Math.max(40, 0.3 * rss[0]!)) problems.push(`${service}: memory grows ~${Math.round(rssGrowth)} MB over ${Math.round(span / 1000)} s`);
    const sockets = steady.map((entry) => entry.sockets[service]!);
    const socketGrowth = slope(times, sockets) * span;
    if (socketGrowth > Math.max(20, 0.5 * sockets[0]!)) problems.push(`${service}: open sockets grow ~${Math.round(socketGrowth)} over ${Math.round(span / 1000)} s`);
  }
} else {
  problems.push("too few samples for a trend; run longer");
}
if (refused > 0) problems.push(`${refused} submissions refused or failed`);
if (failedJobs > 0) problems.push(`${failedJobs} jobs did not complete`);
if (badDeliveries > 0) problems.push(`${badDeliveries} deliveries did not succeed`);

console.log(`submitted ${submitted} jobs, ${deliveries} deliveries, ${receiver.received.length} webhook requests received`);
console.log(problems.length === 0 ? "soak: no error, no growth trend" : `soak FAILED:\n  ${problems.join("\n  ")}`);
await system.stop();
await Promise.all([receiver.close(), media.close()]);
process.exit(problems.length === 0 ? 0 : 1);
