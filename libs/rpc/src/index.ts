export * from "./auth-metadata.js";
export * from "./errors.js";
export * from "./server.js";
export * from "./client.js";
export * from "./health-client.js";
