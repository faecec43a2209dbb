// Whether node_modules matches package.json / package-lock.json. Runs before node_modules exists: Node built-ins only.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Written by the bootstrap after `npm install` exited 0. Not npm's own `node_modules/.package-lock.json`: npm writes
 * that while it links packages, before lifecycle scripts run, so an install that failed in a postinstall (seen: two
 * installs at once, one executing a binary the other was writing, ETXTBSY) left it behind, and every later bootstrap
 * called the half-installed tree (no node_modules/.bin) up to date.
 */
export const INSTALL_MARKER = '.renderbus-installed';

function mtimeMs(file) {
  return existsSync(file) ? statSync(file).mtimeMs : 0;
}

function listDirs(parent) {
  if (!existsSync(parent)) return [];
  return readdirSync(parent, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => path.join(parent, entry.name));
}

/** package.json files whose changes need an install: the root one and every workspace's. */
function manifests(root) {
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

/** Why `npm install` must run in `root`, or undefined when node_modules is up to date. */
export function installReason(root) {
  const nodeModules = path.join(root, 'node_modules');
  const marker = path.join(nodeModules, INSTALL_MARKER);
  if (!existsSync(nodeModules)) return 'node_modules is missing';
  if (!existsSync(marker)) return 'node_modules was not completed by an install that succeeded';
  const installedAt = mtimeMs(marker);
  const changed = [path.join(root, 'package-lock.json'), ...manifests(root)].filter((file) => mtimeMs(file) > installedAt);
  if (changed.length === 0) return undefined;
  return `${changed.map((file) => path.relative(root, file)).join(', ')} changed since the last install`;
}

/** Records that `npm install` just succeeded in `root`: writing the marker dates it now. */
export function markInstalled(root) {
  writeFileSync(path.join(root, 'node_modules', INSTALL_MARKER), `${new Date().toISOString()}\n`);
}
