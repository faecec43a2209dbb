/**
 * Request examples and `x-codeSamples` (a curl line and a TypeScript SDK line) for every operation, rendered by the
 * API reference at /docs. The SDK calls name the methods of `RenderbusClient` (packages/sdk/src/client.ts);
 * openapi-document.test.ts checks that each one exists, so a renamed SDK method fails the build here.
 */

const SOURCE_URL = "https://media.example.com/clip.mp4";
const exampleJob = { type: "thumbnail", inputs: { source: SOURCE_URL }, params: { timestamp: 1 } };

/** A request body per operation that takes one: shown as the body's example and sent by the curl sample. */
export const requestBodyExamples: Record<string, Record<string, unknown>> = {
  submitJob: exampleJob,
  submitBatch: { jobs: [exampleJob, { type: "transcode", inputs: { source: SOURCE_URL }, params: { resolution: "720p" } }] },
  createApiKey: { name: "CI pipeline" },
  createUploadLink: { size: 4194304, filename: "clip.mp4" },
  uploadMedia: { base64: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==", filename: "logo.png" },
  updateOrgWebhook: { webhookUrl: "https://hooks.example.com/renderbus", webhookSecret: "a-long-random-secret" },
  createWebhookEndpoint: { url: "https://hooks.example.com/failures", events: ["job.failed", "endpoint.disabled"], description: "Alerts" },
  updateWebhookEndpoint: { enabled: true },
  rotateWebhookEndpointSecret: { graceSeconds: 86400 },
  recoverWebhookEndpoint: { since: 1764000000000 },
};

/** Values substituted for path parameters in the samples, so they read like real calls. */
const examplePathValues: Record<string, string> = {
  jobId: "job_01JD3Z8X9K2M4N6P8R0T2V4W6Y",
  batchId: "batch_01JD3Z9A1B2C3D4E5F6G7H8J9K",
  keyId: "key_01JD3ZA0B1C2D3E4F5G6H7J8K9",
  orgId: "org_01JD3Z5QF0ZJ8K3M5N7P9R1T3V",
  deliveryId: "del_01JD3ZB2C3D4E5F6G7H8J9K0M1",
  endpointId: "ep_01JD3ZC3D4E5F6G7H8J9K0M1N2",
  uploadId: "upload_01JD3ZC4D5E6F7G8H9J0K1M2N3",
  type: "transcode",
  key: "org_01JD3Z5QF0ZJ8K3M5N7P9R1T3V/job_01JD3Z8X9K2M4N6P8R0T2V4W6Y/output.mp4",
};

/** Example query strings, for operations where one shows what the filters look like. */
const exampleQueries: Record<string, string> = {
  listJobs: "?status=completed&limit=20",
  waitForJob: "?timeoutSeconds=60",
  listBatches: "?status=running",
  listWebhookDeliveries: "?status=failed",
  downloadOutput: "?expires=1764000000000&signature=<64 hex characters from result.url>",
};

const pretty = (value: unknown) => JSON.stringify(value, null, 2);
const job = examplePathValues.jobId;

/** The SDK call per operationId (`client` is a `RenderbusClient`); operations without one get the curl sample only. */
export const sdkSamples: Record<string, string> = {
  submitJob: `const job = await client.jobs.submit(${pretty(exampleJob)});`,
  listJobs: `for await (const job of client.jobs.list({ status: "completed", limit: 20 })) console.log(job.id);`,
  getJob: `const job = await client.jobs.get("${job}");`,
  cancelJob: `const job = await client.jobs.cancel("${job}");`,
  waitForJob: `const job = await client.jobs.longPoll("${job}", { timeoutSeconds: 60 });`,
  streamJobEvents: `for await (const job of client.jobs.events("${job}")) console.log(job.status);`,
  submitBatch: `const batch = await client.batches.submit(${pretty(requestBodyExamples.submitBatch!.jobs)});`,
  listBatches: `for await (const batch of client.batches.list({ status: "running" })) console.log(batch.id);`,
  getBatch: `const batch = await client.batches.get("${examplePathValues.batchId}");`,
  listJobTypes: "const jobTypes = await client.jobTypes.list();",
  createUploadLink: 'const { url, headers } = await client.uploads.createLink(4_194_304, "clip.mp4");',
  uploadMedia: 'const upload = await client.uploads.uploadInline(await readFile("logo.png"), "logo.png");',
  listUploads: `for await (const upload of client.uploads.list()) console.log(upload.id, upload.size, upload.expiresAt);`,
  getUpload: `const upload = await client.uploads.get("${examplePathValues.uploadId}");`,
  getJobTypeSchema: `const jobType = await client.jobTypes.get("${examplePathValues.type}");`,
  getMe: "const me = await client.me();",
  createApiKey: `const { key } = await client.apiKeys.create("${requestBodyExamples.createApiKey!.name as string}");`,
  listApiKeys: "const keys = await client.apiKeys.list();",
  revokeApiKey: `await client.apiKeys.revoke("${examplePathValues.keyId}");`,
  getOrg: "const org = await client.orgs.current();",
  updateOrgWebhook: `const org = await client.orgs.updateWebhook("${examplePathValues.orgId}", ${pretty(requestBodyExamples.updateOrgWebhook)});`,
  getBalance: "const balance = await client.billing.balance();",
  getUsage: "for await (const entry of client.billing.usage()) console.log(entry.kind, entry.credits);",
  listWebhookDeliveries: `for await (const delivery of client.webhooks.deliveries({ status: "failed" })) console.log(delivery.id);`,
  retryWebhookDelivery: `const delivery = await client.webhooks.retry("${examplePathValues.deliveryId}");`,
  sendTestWebhook: "const { succeeded } = await client.webhooks.test();",
  listWebhookEndpoints: "const endpoints = await client.webhooks.endpoints.list();",
  createWebhookEndpoint: `const { id, secret } = await client.webhooks.endpoints.create(${pretty(requestBodyExamples.createWebhookEndpoint)});`,
  getWebhookEndpoint: `const endpoint = await client.webhooks.endpoints.get("${examplePathValues.endpointId}");`,
  updateWebhookEndpoint: `const endpoint = await client.webhooks.endpoints.update("${examplePathValues.endpointId}", { enabled: true });`,
  deleteWebhookEndpoint: `await client.webhooks.endpoints.delete("${examplePathValues.endpointId}");`,
  rotateWebhookEndpointSecret: `const { secret } = await client.webhooks.endpoints.rotateSecret("${examplePathValues.endpointId}", { graceSeconds: 86400 });`,
  recoverWebhookEndpoint: `const { count } = await client.webhooks.endpoints.recover("${examplePathValues.endpointId}", { since: Date.now() - 86_400_000 });`,
  streamWebhookEvents: "for await (const event of client.webhooks.events()) if (event.type === \"webhook\") console.log(event.event);",
};

const SDK_SETUP = 'import { RenderbusClient } from "@renderbus/sdk";\n\nconst client = new RenderbusClient({ apiKey: process.env.RENDERBUS_API_KEY! });\n';

/** Quotes a string for a POSIX shell. */
const shellQuote = (text: string) => `'${text.replace(/'/g, "'\\''")}'`;

export interface CodeSampleInput {
  operationId: string;
  method: string;
  /** OpenAPI path syntax (`/jobs/{jobId}`). */
  path: string;
  authenticated: boolean;
  /** Whether the response is a Server-Sent Events stream (curl needs -N to show events as they arrive). */
  streams?: boolean;
}

/** The curl command of an operation, against `serverUrl`, with its example body. */
export function curlSample({ operationId, method, path, authenticated, streams }: CodeSampleInput, serverUrl: string): string {
  const url = `${serverUrl.replace(/\/$/, "")}${path.replace(/\{(\w+)\}/g, (_, name: string) => examplePathValues[name] ?? `<${name}>`)}${exampleQueries[operationId] ?? ""}`;
  const lines = [`curl${streams ? " -N" : ""}${method.toUpperCase() === "GET" ? "" : ` -X ${method.toUpperCase()}`} ${shellQuote(url)}`];
  if (authenticated) lines.push('-H "Authorization: Bearer $RENDERBUS_API_KEY"');
  const body = requestBodyExamples[operationId];
  if (operationId === "mcp") lines.push("-H 'Content-Type: application/json'", "-H 'Accept: application/json, text/event-stream'", `-d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'`);
  if (body) {
    lines.push("-H 'Content-Type: application/json'");
    if (operationId === "submitJob" || operationId === "submitBatch") lines.push('-H "Idempotency-Key: $(uuidgen)"');
    lines.push(`-d ${shellQuote(JSON.stringify(body))}`);
  }
  if (operationId === "downloadOutput") lines.push("-o output.mp4");
  return lines.join(" \\\n  ");
}

/** `x-codeSamples` (the Redocly / Scalar extension): curl first, then the SDK when it has the call. */
export function codeSamples(input: CodeSampleInput, serverUrl: string): { lang: string; label: string; source: string }[] {
  const samples = [{ lang: "Shell", label: "curl", source: curlSample(input, serverUrl) }];
  const sdk = sdkSamples[input.operationId];
  if (sdk) samples.push({ lang: "TypeScript", label: "SDK (@renderbus/sdk)", source: `${SDK_SETUP}${sdk}` });
  return samples;
}
