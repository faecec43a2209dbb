/**
 * Vitest global setup: brings up PostgreSQL, NATS (JetStream) and Redis once per run and provides their URLs to
 * test files as `inject('infra')` (see testInfra()). DATABASE_URL / NATS_URL / REDIS_URL win when set.
 *
 * The NATS server is always this run's own (never an open one on 4222): it requires the users and permissions of
 * libs/bus/src/nats-permissions.ts, and `natsUrl` carries the harness superuser (`nats://renderbus-dev:...@`), which
 * `Bus.connect` uses; startSystem gives each service its own user. With NATS_URL set, that server is used as given and
 * the permission tests skip themselves when it lets anonymous clients in.
 *
 * `STORAGE=s3` without S3_ENDPOINT runs the whole run against a local S3-protocol server (local-s3.ts): its STORAGE
 * and S3_* variables are set here, before the test processes start, so every service and store a test makes from
 * the environment uses it.
 *
 * Every test process, and every service process a test starts, gets TMPDIR set to a directory of this run, which the
 * teardown removes: the suite's many temporary directories (media, outputs, uploads, CLI configs...) leave nothing
 * behind in /tmp, whether or not the test that made one cleaned it up.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { ensureFfmpeg, ensureLocalInfra } from './local-infra.js';
import { startLocalS3 } from './local-s3.js';
import './provided-context.js';
import { KEPT_LOGS_DIR_VARIABLE } from './run-tmpdir.js';

/** Projects (see vitest.config.ts) whose tests need no infrastructure. */
const INFRA_FREE_PROJECTS = new Set(['unit']);

const log = (line: string) => console.log(`[infra] ${line}`);

const REPO_ROOT = path.resolve(import.meta.dirname, '..', '..', '..');

/** `node scripts/<script>` from the repository root. */
const runScript = (script: string, options: { encoding: 'utf8'; stdio: ['ignore', 'pipe', 'inherit'] } | { stdio: 'inherit' }) =>
  spawnSync(process.execPath, [path.join(REPO_ROOT, 'scripts', script)], { cwd: REPO_ROOT, ...options });

/**
 * The Node 24 binary (`node scripts/node24.mjs`, which installs it once from the npm registry), or undefined when it
 * cannot be had: services then run on this node.
 */
function node24Binary(): string | undefined {
  const found = runScript('node24.mjs', { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return found.status === 0 ? String(found.stdout).trim() || undefined : undefined;
}

/** `node scripts/build-services.mjs`: about a second, and it rewrites only the bundles whose output changed. */
function buildServiceBundles(): void {
  const built = runScript('build-services.mjs', { stdio: 'inherit' });
  if (built.status !== 0) throw new Error(`scripts/build-services.mjs failed (${built.status ?? built.signal})`);
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Taken before TMPDIR points into the run's directory: the infrastructure's data directory is reused across runs.
  const systemTmp = os.tmpdir();
  const runTmp = mkdtempSync(path.join(systemTmp, 'renderbus-test-run-'));
  // The same permissions as /tmp (sticky, anyone may create files): tests run `npm start` as another user (whose tsx
  // writes its cache to TMPDIR), and a checkout copied into it keeps its servers' data in its .data (the postgres
  // user must reach it; README, "npm start").
  chmodSync(runTmp, 0o1777);
  process.env[KEPT_LOGS_DIR_VARIABLE] = systemTmp;
  process.env.TMPDIR = runTmp;
  const removeRunTmp = async () => rmSync(runTmp, { recursive: true, force: true });

  const selected = project.vitest.projects.map((each) => each.name);
  if (selected.length > 0 && selected.every((name) => INFRA_FREE_PROJECTS.has(name))) return removeRunTmp;

  // Services run as they ship, from their bundles (a tsx loader compiling each service's TypeScript at start cost the
  // e2e files ~15% of their time), built here from the source as it is now so an edit is what runs; a caller that
  // sets RENDERBUS_SERVICE_RUNTIME (source, to debug through tsx) keeps its choice.
  if (!process.env.RENDERBUS_SERVICE_RUNTIME) {
    buildServiceBundles();
    process.env.RENDERBUS_SERVICE_RUNTIME = 'bundle';
  }
  // On Node 24, the image's runtime, whatever node runs vitest (a caller that sets RENDERBUS_SERVICE_NODE keeps its
  // choice): a test system also starts in ~30% less CPU there than on Node 20 (5.1-6.0 s against 7.5-8.2 s for the
  // five services, 2026-11-29), and most test files start one.
  if (!process.env.RENDERBUS_SERVICE_NODE) {
    const node24 = node24Binary();
    if (node24) process.env.RENDERBUS_SERVICE_NODE = node24;
    else log(`Node 24 could not be had: services run on this node (${process.version})`);
  }
  await ensureFfmpeg(log);
  const infra = await ensureLocalInfra({ persistent: false, dataDir: path.join(systemTmp, 'renderbus-test-infra'), log });
  const s3 = process.env.STORAGE === 's3' && !process.env.S3_ENDPOINT ? await startLocalS3({ log }) : undefined;
  if (s3) Object.assign(process.env, s3.env);
  project.provide('infra', { databaseUrl: infra.databaseUrl, natsUrl: infra.natsUrl, redisUrl: infra.redisUrl });
  return async () => {
    await s3?.stop();
    await infra.stop();
    await removeRunTmp();
  };
}
