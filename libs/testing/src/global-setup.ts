/**
 * Vitest global setup: brings up PostgreSQL, NATS (JetStream) and Redis once per run and provides their URLs to
 * test files as `inject('infra')` (see testInfra()). DATABASE_URL / NATS_URL / REDIS_URL win when set.
 *
 * The NATS server is always this run's own (never an open one on 4222): it requires the users and permissions of
 * libs/bus/src/nats-permissions.ts, and `natsUrl` carries the harness superuser (`nats://renderbus-dev:...@`), which
 * `Bus.connect` uses; startSystem gives each service its own user. With NATS_URL set, that server is used as given and
 * the permission tests skip themselves when it lets anonymous clients in.
 */
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { ensureFfmpeg, ensureLocalInfra } from './local-infra.js';
import './provided-context.js';

/** Projects (see vitest.config.ts) whose tests need no infrastructure. */
const INFRA_FREE_PROJECTS = new Set(['unit']);

const log = (line: string) => console.log(`[infra] ${line}`);

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const selected = project.vitest.projects.map((each) => each.name);
  if (selected.length > 0 && selected.every((name) => INFRA_FREE_PROJECTS.has(name))) return undefined;

  await ensureFfmpeg(log);
  const infra = await ensureLocalInfra({ persistent: false, dataDir: path.join(os.tmpdir(), 'renderbus-test-infra'), log });
  project.provide('infra', { databaseUrl: infra.databaseUrl, natsUrl: infra.natsUrl, redisUrl: infra.redisUrl });
  return () => infra.stop();
}
