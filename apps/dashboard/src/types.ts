/** The API's JSON shapes (SPEC sections 5a and 6), as the dashboard reads them. */

export interface Me {
  userId: string;
  orgId: string;
  plan: string;
  role: string | null;
  credential: string | null;
}

export interface SessionUser {
  id: string;
  email: string;
  name: string;
}

export interface WebhookDeliverySummary {
  id: string;
  event: string;
  status: string;
  attempts: number;
  lastAttemptAt: number | null;
  nextAttemptAt: number | null;
  lastResponseStatus: number | null;
  lastError: string | null;
}

export interface Job {
  id: string;
  orgId: string;
  batchId: string | null;
  type: string;
  status: string;
  inputs: Record<string, string>;
  params: Record<string, unknown>;
  metadata: Record<string, unknown>;
  result: { url: string; metadata: { durationMs: number | null; width: number | null; height: number | null; fileSize: number | null } } | null;
  cost: { credits: number; breakdown: string } | null;
  error: { code: string; message: string } | null;
  timing: { createdAt: number | null; dispatchedAt: number | null; startedAt: number | null; completedAt: number | null };
  webhookDeliveries: WebhookDeliverySummary[];
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

export interface Batch {
  id: string;
  jobCount: number;
  jobIds: string[];
  status: string;
  counts: Record<string, number>;
  timing: { createdAt: number; completedAt: number | null };
}

export interface ApiKey {
  id: string;
  name: string;
  start: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

export interface CreatedApiKey extends ApiKey {
  key: string;
}

export interface Org {
  id: string;
  name: string;
  plan: string;
  credits: number;
  webhookUrl: string | null;
  webhookSecretSet: boolean;
  createdAt: number;
}

export interface DeliveryAttempt {
  attempt: number;
  startedAt: number;
  responseStatus: number | null;
  error: string | null;
  latencyMs: number;
  responseExcerpt: string | null;
}

export interface Delivery {
  id: string;
  event: string;
  jobId: string | null;
  batchId: string | null;
  status: string;
  attempts: number;
  url: string;
  createdAt: number;
  lastAttemptAt: number | null;
  nextAttemptAt: number | null;
  lastResponseStatus: number | null;
  lastError: string | null;
  attemptLog: DeliveryAttempt[];
}

export interface Balance {
  orgId: string;
  credits: number;
  reserved: number;
  plan: string;
}

export interface UsageEntry {
  id: string;
  kind: string;
  credits: number;
  jobId: string | null;
  balanceAfter: number;
  description: string;
  createdAt: number;
}
