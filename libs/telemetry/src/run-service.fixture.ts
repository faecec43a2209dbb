/**
 * A service started through runService that then fails in the way argv[2] names (run-service.test.ts runs it as
 * a child process): `throw` (uncaught exception inside a job's async context), `reject` (unhandled rejection),
 * `hang` (an uncaught exception whose cleanup never settles); `stop-hangs` instead gets SIGTERM and its stop never
 * settles (SHUTDOWN_TIMEOUT_MS 300); `config-error` refuses its configuration while starting.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { ConfigError } from "@renderbus/config";
import { runService } from "./run-service.js";

const jobs = new AsyncLocalStorage<{ jobId: string }>();
const mode = process.argv[2];

/** Refused while starting, as serviceIdentity refuses production call-token keys or a plaintext gRPC transport. */
const refuseConfig = () => {
  throw new ConfigError([{ variable: "RPC_TRANSPORT", message: "production needs tls or mesh" }]);
};

await runService("fixture", { LOG_LEVEL: "info", SHUTDOWN_TIMEOUT_MS: 300 }, async () => {
  if (mode === "config-error") refuseConfig();
  return {
    stop: () => (mode === "stop-hangs" ? new Promise<void>(() => undefined) : Promise.resolve()),
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
  };
}, {});

if (mode === "stop-hangs") {
  // Kept alive by the interval, as a service is by its connections.
  setInterval(() => undefined, 1_000);
  setTimeout(() => process.kill(process.pid, "SIGTERM"), 50);
} else if (mode !== "config-error") {
  jobs.run({ jobId: "job_fixture" }, () => {
    setTimeout(() => {
      if (mode === "reject") void Promise.reject(new Error("rejected in a job"));
      else throw new Error("thrown in a job");
    }, 50);
  });
}
