#!/usr/bin/env node
// Makes sure node_modules matches package.json / package-lock.json before `npm start` or `npm test`.
// Runs before node_modules exists, so it uses nothing but Node built-ins.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { dashboardBuildState } from './dashboard-build.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const nodeModules = path.join(root, 'node_modules');
// npm rewrites this hidden lockfile at the end of every successful install.
const installMarker = path.join(nodeModules, '.package-lock.json');
const lockfile = path.join(root, 'package-lock.json');

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

function mtimeMs(file) {
  return existsSync(file) ? statSync(file).mtimeMs : 0;
}

/** package.json files whose changes need an install: the root one and every workspace's. */
function manifests() {
  const rootManifest = path.join(root, 'package.json');
  const { workspaces = [] } = JSON.parse(readFileSync(rootManifest, 'utf8'));
  const patterns = Array.isArray(workspaces) ? workspaces : (workspaces.packages ?? []);
  const found = [rootManifest];
  for (const pattern of patterns) {
    // Workspaces here are "dir/*" or plain directories; that is all this expands.
    const dirs = pattern.endsWith('/*') ? listDirs(path.join(root, pattern.slice(0, -2))) : [path.join(root, pattern)];
    for (const dir of dirs) {
      const manifest = path.join(dir, 'package.json');
      if (existsSync(manifest)) found.push(manifest);
    }
  }
  return found;
}

function listDirs(parent) {
  if (!existsSync(parent)) return [];
  return readdirSync(parent, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => path.join(parent, entry.name));
}

/** Which npm command to run, or undefined when node_modules is up to date. */
function planInstall() {
  // Not `npm ci`: the registry these machines use lacks the other platforms' optional packages (for example
  // @bufbuild/buf-darwin-arm64), so the lockfile `npm install` writes here never lists them and `npm ci` refuses
  // it as out of sync. `npm install` still installs the exact versions the lockfile pins.
  if (!existsSync(nodeModules)) return { args: ['install'], reason: 'node_modules is missing' };
  if (!existsSync(installMarker)) return { args: ['install'], reason: 'node_modules was not installed by npm' };
  const installedAt = mtimeMs(installMarker);
  const changed = [lockfile, ...manifests()].filter((file) => mtimeMs(file) > installedAt);
  if (changed.length === 0) return undefined;
  const names = changed.map((file) => path.relative(root, file)).join(', ');
  return { args: ['install'], reason: `${names} changed since the last install` };
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
  // npm leaves the hidden lockfile untouched when nothing changed; mark this install as current anyway.
  if (existsSync(installMarker)) {
    const now = new Date();
    utimesSync(installMarker, now, now);
  }
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
