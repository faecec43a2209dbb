import { loadConfigOrExit } from "@renderbus/config";
import { runService } from "@renderbus/telemetry";
import { gatewayConfigSchema } from "./config.js";
import { startGatewayService } from "./service.js";

await runService("gateway", loadConfigOrExit(gatewayConfigSchema, "gateway"), startGatewayService);
