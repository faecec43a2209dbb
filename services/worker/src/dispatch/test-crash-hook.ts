import type { jobEvents } from "@renderbus/contracts";

/** The query parameter of an input URL that asks the test crash hook to crash the worker. */
export const TEST_CRASH_PARAMETER = "rb-test-crash";

/**
 * Test-only (WORKER_TEST_CRASH_HOOK=true, never in production): crashes this worker process the way an input URL of
 * the dispatch asks with `?rb-test-crash=`: `throw` (an uncaught exception from a callback of the job's work, as the
 * undici parser assertion was) or `sigkill` (the process ends with no chance to report, like an OOM kill). Tests use
 * it to show what a crash does to the job and to the jobs after it.
 * @returns a promise that never settles when it crashed (the job's work stops there), else undefined.
 */
export function crashIfAsked(dispatch: jobEvents.JobDispatch): Promise<never> | undefined {
  for (const url of Object.values(dispatch.inputs ?? {})) {
    if (typeof url !== "string" || !URL.canParse(url)) continue;
    const how = new URL(url).searchParams.get(TEST_CRASH_PARAMETER);
    if (how === "throw") {
      setImmediate(() => {
        throw new Error("test crash hook: uncaught exception while processing the job");
      });
      return new Promise<never>(() => undefined);
    }
    if (how === "sigkill") {
      process.kill(process.pid, "SIGKILL");
      return new Promise<never>(() => undefined);
    }
  }
  return undefined;
}
