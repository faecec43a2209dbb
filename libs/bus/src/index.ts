export * from "./bus.js";
export * from "./streams.js";
export * from "./nats-credentials.js";
export * from "./nats-permissions.js";
