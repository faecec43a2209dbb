import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { canBind, getFreePort, MAX_PORTS_TRIED, PortRegistry, rangeBelowEphemeral } from './free-port.js';

const dirs: string[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  await Promise.all(servers.splice(0).map((server) => new Promise((closed) => server.close(closed))));
});

function registryDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'port-registry-'));
  dirs.push(dir);
  return dir;
}

function listenOn(port: number): Promise<void> {
  return new Promise((listening, failed) => {
    const server = createServer();
    servers.push(server);
    server.once('error', failed);
    server.listen(port, '127.0.0.1', () => listening());
  });
}

/** Runs a registry in another process: it takes `count` ports, prints them, and holds them until `release()`. */
function takeInChild(dir: string, first: number, end: number, count: number): Promise<{ ports: number[]; release: () => Promise<void> }> {
  const moduleUrl = new URL('./free-port.ts', import.meta.url).href;
  const script = `
    import { PortRegistry } from ${JSON.stringify(moduleUrl)};
    const registry = new PortRegistry({ dir: ${JSON.stringify(dir)}, range: { first: ${first}, end: ${end} } });
    const ports = [];
    for (let i = 0; i < ${count}; i += 1) ports.push(await registry.take());
    process.stdout.write(JSON.stringify(ports));
    await new Promise((resolve) => process.stdin.once('data', resolve));
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
    child.stdout.once('data', (data: Buffer) => {
      const release = async () => {
        child.stdin.end('done');
        await exited;
      };
      resolve({ ports: JSON.parse(data.toString()) as number[], release });
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`child exited with ${code} before printing its ports`)));
  });
}

describe('getFreePort', () => {
  it('hands out ports that can be bound, never the same one twice in a process', async () => {
    const ports = await Promise.all(Array.from({ length: 40 }, () => getFreePort()));
    expect(new Set(ports).size).toBe(ports.length);
    await listenOn(ports[0]!);
  });

  it('hands out ports below the ephemeral range, which no outgoing connection can take between pick and bind', async () => {
    const range = rangeBelowEphemeral();
    if (range === undefined) throw new Error('this machine has no room below its ephemeral range; the test expects Linux defaults');
    const port = await getFreePort();
    expect(port).toBeGreaterThanOrEqual(range.first);
    expect(port).toBeLessThan(range.end);
  });
});

// The registries below work in 7100-9100: under the ports getFreePort hands out, so no other test binds one of them.
describe('PortRegistry', () => {
  it('never hands the same port to two processes taking ports at the same time, abandoned reservations or not', async () => {
    const dir = registryDir();
    // Half the range left by a process that is gone: both children take these over at once.
    for (let port = 7_100; port < 7_160; port += 2) writeFileSync(join(dir, String(port)), '2147483646');
    // 60 ports, 2 x 25 taken: with random starts, two unreserved pickers would collide almost surely.
    const [a, b] = await Promise.all([takeInChild(dir, 7_100, 7_160, 25), takeInChild(dir, 7_100, 7_160, 25)]);
    await Promise.all([a!.release(), b!.release()]);
    expect(new Set([...a!.ports, ...b!.ports]).size).toBe(50);
  }, 30_000);

  it("takes over a dead process's reservation, never a living one's", async () => {
    const dir = registryDir();
    writeFileSync(join(dir, '7200'), String(process.pid));
    writeFileSync(join(dir, '7201'), '2147483646'); // no such pid
    const registry = new PortRegistry({ dir, range: { first: 7_200, end: 7_202 } });
    expect(await registry.take()).toBe(7_201);
    expect(await registry.take()).toBeGreaterThanOrEqual(rangeBelowEphemeral()?.end ?? 32_768); // none left: the OS picks
  });

  it('falls back to OS-picked ports, after a bounded search, when another user filled the directory with living reservations', async () => {
    const dir = registryDir();
    const first = 7_900;
    const end = first + MAX_PORTS_TRIED + 200;
    for (let port = first; port < end; port += 1) writeFileSync(join(dir, String(port)), String(process.ppid));
    const registry = new PortRegistry({ dir, range: { first, end } });
    const port = await registry.take();
    expect(port < first || port >= end).toBe(true);
    expect(await canBind(port)).toBe(true);
  });

  it('skips a port a server outside the registry listens on', async () => {
    const dir = registryDir();
    const inUse = await new PortRegistry({ dir: registryDir(), range: { first: 7_300, end: 7_310 } }).take();
    await listenOn(inUse);
    const registry = new PortRegistry({ dir, range: { first: inUse, end: inUse + 2 } });
    expect(await registry.take()).toBe(inUse + 1);
  });

  it('gives the first free port of a range to one process only, skipping a port a server outside the registry holds', async () => {
    const dir = registryDir();
    const first = await new PortRegistry({ dir: registryDir(), range: { first: 7_400, end: 7_410 } }).take();
    await listenOn(first);
    const a = new PortRegistry({ dir, range: { first: 1, end: 2 } });
    const b = new PortRegistry({ dir, range: { first: 1, end: 2 } });
    writeFileSync(join(dir, String(first + 1)), String(process.ppid)); // another living process holds the next one
    expect(await a.takeFirstFree(first, 10)).toBe(first + 2);
    expect(await b.takeFirstFree(first, 10)).toBe(first + 3);
    expect(existsSync(join(dir, String(first)))).toBe(false);
    expect(await a.takeFirstFree(first, 10)).toBe(first + 2); // its own port again, for a restarted server
    expect(await b.takeFirstFree(first, 3)).toBeUndefined();
  });

  it('does not follow a directory another user left as a symlink: it takes OS-picked ports instead', async () => {
    const base = registryDir();
    const target = join(base, 'target');
    mkdirSync(target, 0o755);
    symlinkSync(target, join(base, 'ports'));
    const registry = new PortRegistry({ dir: join(base, 'ports'), range: { first: 7_700, end: 7_710 } });
    const port = await registry.take();
    expect(port < 7_700 || port >= 7_710).toBe(true);
    expect(readdirSync(target)).toEqual([]);
    expect(statSync(target).mode & 0o7777).toBe(0o755);
  });

  it('does not write through a symlink left under the name of its writability probe', async () => {
    const dir = registryDir();
    const victim = join(registryDir(), 'victim');
    writeFileSync(victim, 'keep me');
    symlinkSync(victim, join(dir, `.probe-${process.pid}`));
    const port = await new PortRegistry({ dir, range: { first: 7_750, end: 7_760 } }).take();
    expect(port < 7_750 || port >= 7_760).toBe(true);
    expect(readFileSync(victim, 'utf8')).toBe('keep me');
  });

  it('is not held up or misled by a FIFO or a symlink left under a port\'s name', async () => {
    const dir = registryDir();
    execFileSync('mkfifo', [join(dir, '7800')]);
    const elsewhere = join(registryDir(), 'pid');
    writeFileSync(elsewhere, '2147483646');
    symlinkSync(elsewhere, join(dir, '7801'));
    const registry = new PortRegistry({ dir, range: { first: 7_800, end: 7_803 } });
    expect(await registry.take()).toBe(7_802);
    expect(existsSync(elsewhere)).toBe(true);
  });

  it('removes its reservations when released and when its process exits, and clears those of killed processes', async () => {
    const dir = registryDir();
    const registry = new PortRegistry({ dir, range: { first: 7_500, end: 7_600 } });
    await registry.take();
    expect(readdirSync(dir)).toHaveLength(1);
    registry.releaseAll();
    expect(readdirSync(dir)).toHaveLength(0);

    writeFileSync(join(dir, '7550'), '2147483646'); // left by a process killed without an exit event
    const child = await takeInChild(dir, 7_500, 7_600, 1);
    // Gone, or taken over by the child when its random start landed on it (1 run in 100 did, and failed on `false`).
    const stale = join(dir, '7550');
    expect(existsSync(stale) ? readFileSync(stale, 'utf8') : 'removed').not.toBe('2147483646');
    expect(existsSync(join(dir, String(child.ports[0])))).toBe(true);
    await child.release();
    expect(existsSync(join(dir, String(child.ports[0])))).toBe(false);
  }, 30_000);
});
