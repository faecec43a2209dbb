#!/usr/bin/env node
// `npm run test:unit:node24 [-- vitest args]`: runs the unit tests on Node 24 LTS, the runtime of the image, whatever
// node runs npm here (machines still on Node 20 or 22 included).
//
// Node 24 comes from scripts/node24.mjs. Unit tests only: the integration tests start PostgreSQL, NATS and Redis and
// already run once in `npm test`.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureNode24, NODE24_MAJOR as MAJOR, withNodeOnPath } from './node24.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function say(line) {
  console.log(`[node${MAJOR}-unit] ${line}`);
}

function fail(line) {
  console.error(`[node${MAJOR}-unit] ${line}`);
  process.exit(1);
}

const { nodeBinary, version } = ensureNode24(say, fail);

say(`vitest run --project unit on Node ${version}`);
const env = withNodeOnPath(nodeBinary);
const vitest = path.join(root, 'node_modules', 'vitest', 'vitest.mjs');
const run = spawnSync(nodeBinary, [vitest, 'run', '--project', 'unit', ...process.argv.slice(2)], { cwd: root, stdio: 'inherit', env });
process.exit(run.status ?? 1);
