/**
 * A service started through runService that then fails in the way argv[2] names (run-service.test.ts runs it as
 * a child process): `throw` (uncaught exception inside a job's async context), `reject` (unhandled rejection),
 * `hang` (an uncaught exception whose cleanup never settles).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { runService } from "./run-service.js";

const jobs = new AsyncLocalStorage<{ jobId: string }>();
const mode = process.argv[2];

await runService("fixture", { LOG_LEVEL: "info" }, async () => ({
  stop: async () => undefined,
  fatalContext: () => ({ jobId: jobs.getStore()?.jobId }),
  onFatal: (error) => {
    const jobId = jobs.getStore()?.jobId;
    if (mode === "hang") return new Promise<void>(() => undefined);
    return new Promise<void>((resolve) =>
      setTimeout(() => {
        process.stdout.write(`cleanup for ${jobId}: ${(error as Error).message}\n`);
        resolve();
      }, 100),
    );
  },
}), {});

jobs.run({ jobId: "job_fixture" }, () => {
  setTimeout(() => {
    if (mode === "reject") void Promise.reject(new Error("rejected in a job"));
    else throw new Error("thrown in a job");
  }, 50);
});
