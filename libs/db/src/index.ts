export * from "./database.js";
export * from "./migrations.js";
export * from "./event-store-schema.js";
export * from "./append-to-stream.js";
export * from "./read-stream.js";
export * from "./read-all.js";
export * from "./outbox.js";
export * from "./outbox-relay.js";
