#!/usr/bin/env node
// Makes sure node_modules matches package.json / package-lock.json before `npm start` or `npm test`.
// Runs before node_modules exists, so it uses nothing but Node built-ins.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { dashboardBuildState } from './dashboard-build.mjs';
import { installReason, markInstalled } from './install-plan.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function say(line) {
  console.log(`[bootstrap] ${line}`);
}

function fail(line) {
  console.error(`[bootstrap] ${line}`);
  process.exit(1);
}

function checkNodeVersion() {
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major < 20 || (major === 20 && minor < 19)) {
    fail(`Node ${process.versions.node} is too old; Renderbus needs Node >= 20.19`);
  }
}

/** Which npm command to run, or undefined when node_modules is up to date. */
function planInstall() {
  // Not `npm ci`: the registry these machines use lacks the other platforms' optional packages (for example
  // @bufbuild/buf-darwin-arm64), so the lockfile `npm install` writes here never lists them and `npm ci` refuses
  // it as out of sync. `npm install` still installs the exact versions the lockfile pins.
  const reason = installReason(root);
  return reason === undefined ? undefined : { args: ['install'], reason };
}

function runNpm(args) {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = spawnSync(npm, args, { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
  if (result.error) fail(`could not run npm (${result.error.message}); is npm on PATH?`);
  if (result.status !== 0) {
    fail(`\`npm ${args.join(' ')}\` failed (exit ${result.status ?? result.signal}); fix the error above and run it again`);
  }
}

checkNodeVersion();
const plan = planInstall();
if (plan === undefined) {
  say('dependencies up to date');
} else {
  say(`${plan.reason}: running npm ${plan.args.join(' ')}`);
  const started = Date.now();
  runNpm(plan.args);
  markInstalled(root);
  say(`dependencies installed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

// The gateway serves the dashboard from apps/dashboard/dist; rebuild it when it is missing or older than its sources.
const dashboard = path.join(root, 'apps', 'dashboard');

if (existsSync(path.join(dashboard, 'package.json'))) {
  const state = dashboardBuildState(dashboard);
  if (state !== 'fresh') {
    say(state === 'missing' ? 'dashboard build missing: building it' : 'dashboard sources changed: rebuilding it');
    runNpm(['run', 'build', '-w', '@renderbus/dashboard']);
  } else {
    say('dashboard build up to date');
  }
}

// `npm start` runs each service from its bundle (services/<name>/dist/main.mjs, see scripts/build-services.mjs).
// Always rebuilt, not by modification time: it takes about a second, and a bundle older than its sources would
// run code that is no longer in the checkout.
const servicesBuild = spawnSync(process.execPath, [path.join(root, 'scripts', 'build-services.mjs')], { cwd: root, stdio: 'inherit' });
if (servicesBuild.status !== 0) fail('bundling the services failed; fix the error above and run it again');
