import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './libs/testing/src/slow-first-sequencer.js';

/** Where tests live: beside the code in libs and services, plus services' own test/ folders. */
const testRoots = [
  'libs/*/src/**',
  'services/*/src/**',
  'services/*/test/**',
  'packages/*/src/**',
  'packages/*/test/**',
  'apps/*/test/**',
  'examples/*/src/**',
  'e2e/**',
  'deploy',
  'docs',
  'bench/**',
  'scripts',
];

/** Tests that talk to real PostgreSQL / NATS / Redis; everything else is a unit test. */
const integrationSuffixes = ['.int.test.ts', '.e2e.test.ts'];

/** Per-project settings (projects do not inherit the root `test` options unless they `extends` it). */
const shared = {
  testTimeout: 60_000,
  hookTimeout: 120_000,
  pool: 'forks',
  // Vitest's default (cores - 1) runs one file at a time on a 2-core machine, and most of an e2e file's time is spent
  // waiting on its services: two files at once took the suite from 25.5 to 16.8 min here (2026-11-29), and from 42.5 to 33.9 min on a slower machine.
  maxWorkers: Math.max(2, availableParallelism() - 1),
  // A worker keeps its modules from one test file to the next instead of a fresh process per file: importing each
  // file's graph (the gateway, kysely, nats, grpc...) cost the suite 297 s of its 2 x 1,707 s and the forks most of the
  // rest of its idle time (2026-12-02, one `npm test` on a slow host: vitest 1,707 -> 1,462 s, the Node 24 unit run
  // 97 -> 43 s; a subset of 103 integration files: 387 -> 259 s).
  // A file therefore gives back what it registers process-wide: Tracing.shutdown releases the OpenTelemetry globals,
  // and a file that mocks a module loads what imports it afresh (vi.resetModules, openapi-document.test.ts), and
  // leaves no long timer of ours armed: the setup below clears what a file leaves and warns (armed-timers.ts).
  isolate: false,
  setupFiles: 'libs/testing/src/armed-timers.setup.ts',
} as const;

export default defineConfig({
  test: {
    ...shared,
    // Runs once per `vitest` invocation in the root project; it skips starting servers when only `unit` runs.
    globalSetup: ['libs/testing/src/global-setup.ts'],
    // The files that take minutes start first, so that no worker is left running one alone at the end.
    sequence: { sequencer: SlowFirstSequencer },
    projects: [
      {
        test: {
          ...shared,
          name: 'unit',
          include: testRoots.map((root) => `${root}/*.test.ts`),
          exclude: ['**/node_modules/**', ...integrationSuffixes.map((suffix) => `**/*${suffix}`)],
        },
      },
      {
        test: {
          ...shared,
          name: 'integration',
          include: testRoots.flatMap((root) => integrationSuffixes.map((suffix) => `${root}/*${suffix}`)),
          exclude: ['**/node_modules/**'],
        },
      },
    ],
  },
});
