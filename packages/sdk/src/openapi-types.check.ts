/**
 * Compile-time check that the SDK's hand-written types (types.ts) are the types of `/openapi.json`: each pair below
 * must be assignable both ways, or `npm run typecheck` fails at that line. openapi.generated.ts is generated from the
 * document by openapi-typescript (`npm run openapi:types`); openapi-types.test.ts fails when it is stale. Neither file
 * is part of the published package (tsconfig.build.json).
 */
import type { components, operations } from "./openapi.generated.js";
import type {
  ApiKey,
  Balance,
  Batch,
  CreatedApiKey,
  Delivery,
  Job,
  JobSpec,
  JobType,
  ListBatchesParams,
  ListDeliveriesParams,
  ListJobsParams,
  Me,
  Org,
  Page,
  SubmittedBatch,
  TestWebhookOutcome,
  UpdateOrgWebhookParams,
  Upload,
  UploadLink,
  UsageEntry,
  WebhookPayload,
} from "./types.js";

/** true when A and B are assignable to each other (the same values), else false. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** Fails to compile unless T is true. */
type Assert<T extends true> = T;

type Operation = keyof operations;
type Responses<Op extends Operation> = operations[Op]["responses"];
/** The JSON body of an operation's success response. */
type Success<Op extends Operation> = Responses<Op> extends { 200: { content: { "application/json": infer Body } } }
  ? Body
  : Responses<Op> extends { 201: { content: { "application/json": infer Body } } }
    ? Body
    : never;
type Data<Op extends Operation> = Success<Op> extends { data: infer D } ? D : never;
type RequestBody<Op extends Operation> = operations[Op] extends { requestBody?: { content: { "application/json": infer Body } } } ? Body : never;
type Query<Op extends Operation> = NonNullable<operations[Op]["parameters"]["query"]>;
type Schema<Name extends keyof components["schemas"]> = components["schemas"][Name];

export type SdkTypesMatchOpenApi = [
  // Success bodies, per operation the client calls (client.ts names the operationId of each method).
  Assert<Same<Job, Data<"submitJob">>>,
  Assert<Same<Job, Data<"getJob">>>,
  Assert<Same<Job, Data<"cancelJob">>>,
  Assert<Same<Page<Job>, Success<"listJobs">>>,
  Assert<Same<SubmittedBatch, Data<"submitBatch">>>,
  Assert<Same<Batch, Data<"getBatch">>>,
  Assert<Same<Page<Batch>, Success<"listBatches">>>,
  Assert<Same<JobType[], Data<"listJobTypes">>>,
  Assert<Same<JobType, Data<"getJobTypeSchema">>>,
  Assert<Same<CreatedApiKey, Data<"createApiKey">>>,
  Assert<Same<ApiKey[], Data<"listApiKeys">>>,
  Assert<Same<ApiKey, Data<"revokeApiKey">>>,
  Assert<Same<Org, Data<"getOrg">>>,
  Assert<Same<Org, Data<"updateOrgWebhook">>>,
  Assert<Same<Balance, Data<"getBalance">>>,
  Assert<Same<Page<UsageEntry>, Success<"getUsage">>>,
  Assert<Same<Me, Data<"getMe">>>,
  Assert<Same<Page<Delivery>, Success<"listWebhookDeliveries">>>,
  Assert<Same<Delivery, Data<"retryWebhookDelivery">>>,
  Assert<Same<TestWebhookOutcome, Data<"sendTestWebhook">>>,
  Assert<Same<Upload, Data<"getUpload">>>,
  Assert<Same<Upload, Data<"uploadMedia">>>,
  Assert<Same<UploadLink, Data<"createUploadLink">>>,
  // Request bodies and query parameters.
  Assert<Same<JobSpec, RequestBody<"submitJob">>>,
  Assert<Same<{ jobs: JobSpec[] }, RequestBody<"submitBatch">>>,
  Assert<Same<UpdateOrgWebhookParams, RequestBody<"updateOrgWebhook">>>,
  Assert<Same<ListJobsParams, Query<"listJobs">>>,
  Assert<Same<ListBatchesParams, Query<"listBatches">>>,
  Assert<Same<ListDeliveriesParams, Query<"listWebhookDeliveries">>>,
  // Webhook payloads (the document's `webhooks`).
  Assert<
    Same<
      WebhookPayload,
      Schema<"JobRunningEvent"> | Schema<"JobCompletedEvent"> | Schema<"JobFailedEvent"> | Schema<"BatchCompletedEvent"> | Schema<"WebhookTestEvent"> | Schema<"JobProgressEvent"> | Schema<"EndpointDisabledEvent">
    >
  >,
];
