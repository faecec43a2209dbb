import { loadConfigOrExit } from "@renderbus/config";
import { runService } from "@renderbus/telemetry";
import { workerConfigSchema } from "./config.js";
import { startWorkerService } from "./service.js";

await runService("worker", loadConfigOrExit(workerConfigSchema, "worker"), startWorkerService);
