/**
 * Generated gRPC clients/servers and event payload types, from `proto/` (run `npm run proto` after editing).
 * Re-exported per package so callers write `auth.AuthClient`, `jobs.JobCompleted`, ...
 */
export * as auth from "./generated/renderbus/auth/v1/auth.js";
export * as authEvents from "./generated/renderbus/auth/v1/events.js";
export * as jobs from "./generated/renderbus/jobs/v1/jobs.js";
export * as jobEvents from "./generated/renderbus/jobs/v1/events.js";
export * as webhooks from "./generated/renderbus/webhooks/v1/webhooks.js";
