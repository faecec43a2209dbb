// Every test file's setup (vitest.config.ts `setupFiles`): clears the long timers of ours a file leaves armed once its
// own afterAll hooks have run, so they cannot fire during the next file of the same worker (armed-timers.ts says
// why), and warns with where each was armed. A warning, not a failure: what it found that depended on timing
// (refused-bodies.int.test.ts left two in one full run and none in another) was a gateway bug, now fixed and tested
// there (a refused body's deadline outlived its closed connection), and a check that fails on timing would fail CI
// at random; a warning names the next such timer without that.
import { join } from "node:path";
import { afterAll, expect } from "vitest";
import { describeLeftovers, trackArmedTimers, type ArmedTimers } from "./armed-timers.js";

/** Shorter timers are left alone (armed-timers.ts); the one that failed CI was 60 s. */
const LONG_TIMER_MS = 10_000;
const repoRoot = join(import.meta.dirname, "..", "..", "..");

const shared = globalThis as { armedTimers?: ArmedTimers };
// Setup files run again for each file of a worker; the tracker is installed once per process.
shared.armedTimers ??= trackArmedTimers({ roots: [`${repoRoot}/`], minDelayMs: LONG_TIMER_MS });
const tracker = shared.armedTimers;
const file = expect.getState().testPath ?? "";
tracker.enterFile(file);

// Registered before the file's own hooks, so it runs after them (vitest runs after-hooks in reverse order).
afterAll(() => {
  const leftovers = tracker.takeLeftovers(file);
  if (leftovers.length > 0) console.warn(describeLeftovers(file.replace(repoRoot, "."), leftovers));
});
