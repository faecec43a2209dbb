// Node 24 LTS, the runtime of the image, for whatever node runs npm here (machines still on Node 20 or 22 included).
//
// It comes from the npm registry's `node` package, which ships the binary inside it: installed once into a cache
// folder outside the checkout (RENDERBUS_NODE24_DIR, else ~/.cache/renderbus/node24), so no download step other than
// npm's own and nothing added to the repository's dependencies. Used by `npm run test:unit:node24` and `npm run bench`.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const NODE24_MAJOR = 24;
const cacheDir = process.env.RENDERBUS_NODE24_DIR ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'renderbus', `node${NODE24_MAJOR}`);
const nodeBinary = path.join(cacheDir, 'node_modules', 'node', 'bin', process.platform === 'win32' ? 'node.exe' : 'node');

/** The version the cached binary prints, or undefined when it is missing or does not run. */
function cachedVersion() {
  if (!existsSync(nodeBinary)) return undefined;
  const result = spawnSync(nodeBinary, ['--version'], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/**
 * The path and version of a Node 24 binary, installed first when the cache has none; `say` reports an install,
 * `fail` (which must not return) a failed one.
 */
export function ensureNode24(say, fail) {
  if (process.versions.node.startsWith(`${NODE24_MAJOR}.`)) return { nodeBinary: process.execPath, version: process.version };
  let version = cachedVersion();
  if (!version?.startsWith(`v${NODE24_MAJOR}.`)) {
    say(`installing node@${NODE24_MAJOR} from the npm registry into ${cacheDir}`);
    mkdirSync(cacheDir, { recursive: true });
    // The package's preinstall picks the binary for this platform. npm 11.16+ warns about install scripts that no
    // package.json allows, and npm 12 skips them (no binary): the cache folder's own manifest allows this one.
    writeFileSync(path.join(cacheDir, 'package.json'), `${JSON.stringify({ private: true, allowScripts: { node: true } }, null, 2)}\n`);
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const install = spawnSync(npm, ['install', '--prefix', cacheDir, '--no-save', '--no-package-lock', '--no-audit', '--no-fund', `node@${NODE24_MAJOR}`], {
      cwd: cacheDir,
      // npm's report ("added 2 packages") to stderr too: stdout is the binary's path alone (`node scripts/node24.mjs`).
      stdio: ['ignore', 2, 2],
      shell: process.platform === 'win32',
    });
    if (install.status !== 0) fail(`\`npm install node@${NODE24_MAJOR}\` failed (exit ${install.status ?? install.signal})`);
    version = cachedVersion();
    if (!version?.startsWith(`v${NODE24_MAJOR}.`)) fail(`${nodeBinary} does not run as Node ${NODE24_MAJOR} (it printed ${version ?? 'nothing'})`);
  }
  return { nodeBinary, version };
}

/** `env` with the binary's folder first on PATH, so a child that starts `node` by name gets Node 24 too. */
export function withNodeOnPath(binary, env = process.env) {
  return { ...env, PATH: `${path.dirname(binary)}${path.delimiter}${env.PATH ?? ''}` };
}

// `node scripts/node24.mjs`: prints the Node 24 binary's path (installing it first when missing; progress on stderr).
// The test run's global setup starts its services with it (libs/testing/src/global-setup.ts).
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const { nodeBinary } = ensureNode24(
    (line) => console.error(`[node${NODE24_MAJOR}] ${line}`),
    (line) => {
      console.error(`[node${NODE24_MAJOR}] ${line}`);
      process.exit(1);
    },
  );
  console.log(nodeBinary);
}
