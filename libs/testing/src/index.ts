export * from './local-infra.js';
export * from './local-postgres.js';
export * from './local-nats.js';
export * from './local-redis.js';
export * from './provided-context.js';
export * from './test-infra.js';
export * from "./test-database.js";
export * from "./system.js";
