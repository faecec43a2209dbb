#!/usr/bin/env node
// `npm run bench [-- <bench/run.ts options>] [-- --node current]`: runs bench/run.ts, and so every service, peer sender
// and load generator it starts, on Node 24, the runtime of the image (scripts/node24.mjs installs it when missing).
// Measured on the node that runs npm instead, a benchmark can miss what production meets: on Node 20 the services'
// young generation was sized differently, and a garbage-collection cost of 4-7x per delivery on Node 24 went unseen.
// `--node current` keeps the node that runs npm (the report names the version either way).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureNode24, withNodeOnPath } from './node24.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const fail = (line) => {
  console.error(`[bench] ${line}`);
  process.exit(1);
};
const nodeOption = args.indexOf('--node');
if (nodeOption >= 0 && args[nodeOption + 1] !== 'current') fail(`--node takes only \`current\` (got ${args[nodeOption + 1] ?? 'nothing'})`);
const current = nodeOption >= 0;
if (current) args.splice(nodeOption, 2);
const { nodeBinary } = current ? { nodeBinary: process.execPath } : ensureNode24((line) => console.error(`[bench] ${line}`), fail);
const run = spawnSync(nodeBinary, ['--import', 'tsx', path.join(root, 'bench', 'run.ts'), ...args], { cwd: root, stdio: 'inherit', env: withNodeOnPath(nodeBinary) });
process.exit(run.status ?? 1);
