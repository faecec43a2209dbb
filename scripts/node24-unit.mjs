#!/usr/bin/env node
// `npm run test:unit:node24 [-- vitest args]`: runs the unit tests on Node 24 LTS, the runtime of the image, whatever
// node runs npm here (machines still on Node 20 or 22 included).
//
// Node 24 comes from the npm registry's `node` package, which ships the binary inside it: installed once into a cache
// folder outside the checkout (RENDERBUS_NODE24_DIR, else ~/.cache/renderbus/node24), so no download step other than
// npm's own and nothing added to the repository's dependencies. Unit tests only: the integration tests start
// PostgreSQL, NATS and Redis and already run once in `npm test`.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MAJOR = 24;
const cacheDir = process.env.RENDERBUS_NODE24_DIR ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'renderbus', `node${MAJOR}`);
const nodeBinary = path.join(cacheDir, 'node_modules', 'node', 'bin', process.platform === 'win32' ? 'node.exe' : 'node');

function say(line) {
  console.log(`[node${MAJOR}-unit] ${line}`);
}

function fail(line) {
  console.error(`[node${MAJOR}-unit] ${line}`);
  process.exit(1);
}

/** The version the cached binary prints, or undefined when it is missing or does not run. */
function cachedVersion() {
  if (!existsSync(nodeBinary)) return undefined;
  const result = spawnSync(nodeBinary, ['--version'], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

let version = cachedVersion();
if (!version?.startsWith(`v${MAJOR}.`)) {
  say(`installing node@${MAJOR} from the npm registry into ${cacheDir}`);
  mkdirSync(cacheDir, { recursive: true });
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const install = spawnSync(npm, ['install', '--prefix', cacheDir, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', `node@${MAJOR}`], {
    cwd: cacheDir,
    stdio: 'inherit',
    shell: process.platform === 'win32',
  });
  if (install.status !== 0) fail(`\`npm install node@${MAJOR}\` failed (exit ${install.status ?? install.signal})`);
  version = cachedVersion();
  if (!version?.startsWith(`v${MAJOR}.`)) fail(`${nodeBinary} does not run as Node ${MAJOR} (it printed ${version ?? 'nothing'})`);
}

say(`vitest run --project unit on Node ${version}`);
// The binary's folder first on PATH, so a test that starts `node` by name gets Node 24 too.
const env = { ...process.env, PATH: `${path.dirname(nodeBinary)}${path.delimiter}${process.env.PATH ?? ''}` };
const vitest = path.join(root, 'node_modules', 'vitest', 'vitest.mjs');
const run = spawnSync(nodeBinary, [vitest, 'run', '--project', 'unit', ...process.argv.slice(2)], { cwd: root, stdio: 'inherit', env });
process.exit(run.status ?? 1);
