import { loadConfigOrExit } from "@renderbus/config";
import { runService } from "@renderbus/telemetry";
import { configSchema } from "./config.js";
import { startDispatcherService } from "./service.js";

await runService("webhook-dispatcher", loadConfigOrExit(configSchema, "webhook-dispatcher"), startDispatcherService);
