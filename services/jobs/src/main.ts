import { loadConfigOrExit } from "@renderbus/config";
import { runService } from "@renderbus/telemetry";
import { jobsConfigSchema } from "./config.js";
import { startJobsService } from "./service.js";

await runService("jobs", loadConfigOrExit(jobsConfigSchema, "jobs"), startJobsService);
