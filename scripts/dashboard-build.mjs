// Whether apps/dashboard/dist (what the gateway serves) is missing or older than its sources. Used by
// scripts/bootstrap.mjs (npm start, npm test) and by the browser tests run on their own (e2e/dashboard/browser.ts).
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const SOURCES = ['src', 'public', 'index.html', 'vite.config.ts', 'package.json'];

function newestMtimeMs(entry) {
  if (!existsSync(entry)) return 0;
  const stat = statSync(entry);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(entry).reduce((newest, name) => Math.max(newest, newestMtimeMs(path.join(entry, name))), stat.mtimeMs);
}

/** `missing`, `stale` (a source changed after the build) or `fresh`, for the dashboard at `dashboardDir`. */
export function dashboardBuildState(dashboardDir) {
  const index = path.join(dashboardDir, 'dist', 'index.html');
  if (!existsSync(index)) return 'missing';
  const changedAt = Math.max(...SOURCES.map((name) => newestMtimeMs(path.join(dashboardDir, name))));
  return changedAt > statSync(index).mtimeMs ? 'stale' : 'fresh';
}
