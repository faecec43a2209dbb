import { loadConfigOrExit } from "@renderbus/config";
import { runService } from "@renderbus/telemetry";
import { authConfigSchema } from "./config.js";
import { startAuthService } from "./service.js";

await runService("auth", loadConfigOrExit(authConfigSchema, "auth"), startAuthService);
