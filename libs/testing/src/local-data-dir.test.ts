import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkoutHash, chooseServerDataDir } from './local-data-dir.js';

const isRoot = process.getuid?.() === 0;
/** Stands in for the postgres OS user: an unprivileged user every Linux has. */
const nobody = { uid: 65534, gid: 65534 };

describe('chooseServerDataDir', () => {
  let scratch: string;
  let systemRoot: string;

  beforeAll(async () => {
    scratch = await mkdtemp(path.join(os.tmpdir(), 'renderbus-data-dir-test-'));
    await chmod(scratch, 0o755);
    systemRoot = path.join(scratch, 'system');
  });

  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it('keeps the data in the checkout\'s .data when the postgres user can reach it', async () => {
    const checkout = path.join(scratch, 'open', 'renderbus');
    await mkdir(checkout, { recursive: true, mode: 0o755 });

    const chosen = await chooseServerDataDir({ checkoutDir: checkout, env: {}, postgresUser: nobody, systemRoot });

    expect(chosen).toEqual({ dir: path.join(checkout, '.data'), reason: 'inside the checkout' });
    expect(existsSync(chosen.dir)).toBe(true);
  });

  it.skipIf(!isRoot)('uses the same folder of its own under the system root, every time, for a checkout in a private folder', async () => {
    const home = path.join(scratch, 'home');
    const checkout = path.join(home, 'renderbus');
    const other = path.join(home, 'renderbus-2');
    await mkdir(checkout, { recursive: true });
    await mkdir(other, { recursive: true });
    await chmod(home, 0o700);

    const first = await chooseServerDataDir({ checkoutDir: checkout, env: {}, postgresUser: nobody, systemRoot });
    const again = await chooseServerDataDir({ checkoutDir: checkout, env: {}, postgresUser: nobody, systemRoot });
    const ofOther = await chooseServerDataDir({ checkoutDir: other, env: {}, postgresUser: nobody, systemRoot });

    expect(first.dir).toBe(path.join(systemRoot, checkoutHash(checkout)));
    expect(first.reason).toMatch(/not reachable by OS user postgres/);
    expect(again.dir).toBe(first.dir);
    expect(ofOther.dir).not.toBe(first.dir);
    expect(readFileSync(path.join(first.dir, 'checkout.txt'), 'utf8')).toBe(`${checkout}\n`);
    expect(existsSync(path.join(checkout, '.data'))).toBe(false);
  });

  it('uses RENDERBUS_SERVER_DATA_DIR when set', async () => {
    const dir = path.join(scratch, 'chosen');

    const chosen = await chooseServerDataDir({ checkoutDir: scratch, env: { RENDERBUS_SERVER_DATA_DIR: dir }, postgresUser: nobody, systemRoot });

    expect(chosen).toEqual({ dir, reason: 'RENDERBUS_SERVER_DATA_DIR' });
    expect(existsSync(dir)).toBe(true);
  });
});
