import type { RouteDefinition } from "../http/route.js";
import { accountRoutes } from "./account.routes.js";
import { jobRoutes } from "./jobs.routes.js";
import { webhookEndpointRoutes } from "./webhook-endpoints.routes.js";
import { webhookRoutes } from "./webhooks.routes.js";
import { uploadRoutes } from "../uploads/uploads.routes.js";

/** The public API: every authenticated, rate-limited route. OpenAPI and MCP tools are generated from this list. */
export const apiRoutes: RouteDefinition[] = [...jobRoutes, ...uploadRoutes, ...accountRoutes, ...webhookRoutes, ...webhookEndpointRoutes] as RouteDefinition[];
