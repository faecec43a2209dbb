export * from "./logger.js";
export * from "./tracing.js";
export * from "./metrics.js";
export * from "./metrics-server.js";
export * from "./http-server-telemetry.js";
export * from "./run-service.js";
