/**
 * Renderbus SDK: a typed client for the Renderbus media job API with safe retries, cursor pagination, job waiting
 * and webhook signature verification.
 */
export { RenderbusClient, type RenderbusClientOptions, type SubmitOptions } from "./client.js";
export { RenderbusError, RenderbusConnectionError, WaitTimeoutError } from "./errors.js";
export { PageIterator } from "./pagination.js";
export type { RetryOptions } from "./transport.js";
export type { WaitForJobOptions } from "./wait-for-job.js";
export type { UploadFileOptions, UploadSource } from "./upload-file.js";
export {
  verifyWebhook,
  constructWebhookEvent,
  WebhookVerificationError,
  type VerifyWebhookOptions,
  type WebhookHeaders,
  type WebhookBody,
} from "./verify-webhook.js";
export * from "./types.js";
