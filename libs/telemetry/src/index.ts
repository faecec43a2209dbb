export * from "./logger.js";
export * from "./tracing.js";
export * from "./metrics.js";
export * from "./run-service.js";
