import { describe, expect, it } from "vitest";
// Test-only: the gateway's route table is the one description of the API (it drives OpenAPI and MCP too).
import { apiRoutes } from "../../../services/gateway/src/routes/index.js";
import { RenderbusClient } from "./client.js";

/** Which SDK method calls each operationId of the route table. */
const sdkMethods: Record<string, (client: RenderbusClient) => unknown> = {
  submitJob: (client) => client.jobs.submit,
  listJobs: (client) => client.jobs.list,
  getJob: (client) => client.jobs.get,
  cancelJob: (client) => client.jobs.cancel,
  waitForJob: (client) => client.jobs.longPoll,
  submitBatch: (client) => client.batches.submit,
  getBatch: (client) => client.batches.get,
  listBatches: (client) => client.batches.list,
  listJobTypes: (client) => client.jobTypes.list,
  getJobTypeSchema: (client) => client.jobTypes.get,
  listUploads: (client) => client.uploads.list,
  getUpload: (client) => client.uploads.get,
  createUploadLink: (client) => client.uploads.createLink,
  uploadMedia: (client) => client.uploads.uploadInline,
  getMe: (client) => client.me,
  createApiKey: (client) => client.apiKeys.create,
  listApiKeys: (client) => client.apiKeys.list,
  revokeApiKey: (client) => client.apiKeys.revoke,
  getOrg: (client) => client.orgs.current,
  updateOrgWebhook: (client) => client.orgs.updateWebhook,
  getBalance: (client) => client.billing.balance,
  getUsage: (client) => client.billing.usage,
  listWebhookDeliveries: (client) => client.webhooks.deliveries,
  retryWebhookDelivery: (client) => client.webhooks.retry,
  sendTestWebhook: (client) => client.webhooks.test,
  listWebhookEndpoints: (client) => client.webhooks.endpoints.list,
  createWebhookEndpoint: (client) => client.webhooks.endpoints.create,
  getWebhookEndpoint: (client) => client.webhooks.endpoints.get,
  updateWebhookEndpoint: (client) => client.webhooks.endpoints.update,
  deleteWebhookEndpoint: (client) => client.webhooks.endpoints.delete,
  rotateWebhookEndpointSecret: (client) => client.webhooks.endpoints.rotateSecret,
  recoverWebhookEndpoint: (client) => client.webhooks.endpoints.recover,
};

describe("RenderbusClient", () => {
  it("has a method for every route of the gateway's route table", () => {
    const client = new RenderbusClient({ apiKey: "rb_test" });
    const operations = apiRoutes.map((route) => route.operationId);
    expect(operations.filter((operation) => !sdkMethods[operation])).toEqual([]);
    for (const operation of operations) expect(typeof sdkMethods[operation]!(client)).toBe("function");
  });

  it("refuses to start without an API key", () => {
    expect(() => new RenderbusClient({ apiKey: "" })).toThrow(/apiKey/);
  });

  it("longPoll asks GET /jobs/{id}/wait with timeoutSeconds (the path id encoded)", async () => {
    const seen: { url: string; signal: AbortSignal | null | undefined }[] = [];
    const fakeFetch: typeof fetch = async (input, init) => {
      seen.push({ url: String(input), signal: init?.signal });
      return new Response(JSON.stringify({ data: { id: "job_1", status: "running" } }), { status: 200, headers: { "content-type": "application/json" } });
    };
    const client = new RenderbusClient({ apiKey: "rb_test", baseUrl: "http://gateway.test", fetch: fakeFetch, timeoutMs: 1_000 });
    const job = await client.jobs.longPoll("job_1", { timeoutSeconds: 45 });
    expect(job).toMatchObject({ id: "job_1", status: "running" });
    expect(seen[0]!.url).toBe("http://gateway.test/jobs/job_1/wait?timeoutSeconds=45");
    await client.jobs.longPoll("job 2");
    expect(seen[1]!.url).toBe("http://gateway.test/jobs/job%202/wait");
  });
});
