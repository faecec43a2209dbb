import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureLocalInfra, type LocalInfra } from './local-infra.js';
import { canConnectNats, natsConnectOptions } from './local-nats.js';
import { canQueryPostgres } from './local-postgres.js';
import { canPingRedis } from './local-redis.js';
import { testInfra } from './test-infra.js';

describe('ensureLocalInfra in test mode', () => {
  let dataDir: string;
  let infra: LocalInfra;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'renderbus-local-infra-test-'));
    infra = await ensureLocalInfra({ dataDir, persistent: false, ignoreEnv: true });
  });

  afterAll(async () => {
    await infra?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('spawns fresh servers on random ports instead of the default ones', () => {
    expect(infra.databaseUrl).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
    expect(infra.natsUrl).toMatch(/^nats:\/\/renderbus-dev:[^@]+@127\.0\.0\.1:\d+$/);
    expect(infra.redisUrl).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
    expect(new URL(infra.databaseUrl).port).not.toBe('5432');
    expect(new URL(infra.natsUrl).port).not.toBe('4222');
    expect(new URL(infra.redisUrl).port).not.toBe('6379');
  });

  it('runs PostgreSQL with the throwaway settings', async () => {
    const client = new pg.Client({ connectionString: infra.databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ one: number; fsync: string }>(
        "select 1 as one, current_setting('fsync') as fsync",
      );
      expect(rows).toEqual([{ one: 1, fsync: 'off' }]);
    } finally {
      await client.end();
    }
  });

  it('runs NATS with JetStream: a published message reads back from its stream', async () => {
    // The URL carries the harness superuser; nats.js takes the credentials as options.
    const connection = await connect(natsConnectOptions(infra.natsUrl));
    try {
      const manager = await jetstreamManager(connection);
      await manager.streams.add({ name: 'LOCAL_INFRA_TEST', subjects: ['local-infra-test.>'] });
      const ack = await jetstream(connection).publish('local-infra-test.hello', 'hi there', { msgID: 'msg-1' });
      expect(ack.stream).toBe('LOCAL_INFRA_TEST');

      const stored = await manager.streams.getMessage('LOCAL_INFRA_TEST', { seq: ack.seq });
      expect(stored?.subject).toBe('local-infra-test.hello');
      expect(stored?.string()).toBe('hi there');
    } finally {
      await connection.close();
    }
  });

  it('runs NATS with the users of nats-permissions.ts: a client without credentials is refused', async () => {
    expect(await canConnectNats(infra.natsUrl.replace(/\/\/[^@]+@/, '//'))).toBe(false);
    expect(await canConnectNats(infra.natsUrl, true)).toBe(true);
  });

  it('runs Redis answering PING', async () => {
    expect(await canPingRedis(infra.redisUrl)).toBe(true);
  });

  it('makes every server unreachable and removes its files on stop()', async () => {
    await infra.stop();

    expect(await canQueryPostgres(infra.databaseUrl)).toBe(false);
    expect(await canConnectNats(infra.natsUrl)).toBe(false);
    expect(await canPingRedis(infra.redisUrl)).toBe(false);
    const leftovers = existsSync(dataDir) ? (await readdir(dataDir)).filter((entry) => entry.startsWith('run-')) : [];
    expect(leftovers).toEqual([]);
    await expect(infra.stop()).resolves.toBeUndefined();
  });
});

describe('testInfra()', () => {
  it('returns the servers the global setup provided, all reachable', async () => {
    const infra = testInfra();

    expect(await canQueryPostgres(infra.databaseUrl)).toBe(true);
    expect(await canConnectNats(infra.natsUrl)).toBe(true);
    expect(await canPingRedis(infra.redisUrl)).toBe(true);
  });
});
