/** The API's JSON shapes (docs/concepts.md), as the dashboard reads them. */

// The API's objects are typed once, by the SDK. Imported from its source (types only, erased from the bundle):
// the package's own entry points at its compiled dist/, which a fresh checkout does not have.
export type {
  ApiKey,
  Balance,
  Batch,
  CreatedApiKey,
  CreatedEndpoint,
  Delivery,
  DeliveryAttempt,
  Endpoint,
  Job,
  JobStatus,
  JobWebhookDelivery as WebhookDeliverySummary,
  Me,
  Org,
  UsageEntry,
} from "../../../packages/sdk/src/types";
export { JOB_STATUSES } from "../../../packages/sdk/src/types";

export interface SessionUser {
  id: string;
  email: string;
  name: string;
  /** Whether the address is confirmed (the link sent at sign-up was followed; false until then where that is required). */
  emailVerified: boolean;
}

export interface JobType {
  name: string;
  description: string;
  inputs: string[];
  paramsSchema: import("./schema-form").ObjectJsonSchema;
  plans: string[];
  output: string;
  price: string;
}

