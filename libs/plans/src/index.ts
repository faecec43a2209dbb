import { z } from "zod";

export const PLAN_NAMES = ["free", "starter", "pro", "scale"] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export interface Plan {
  name: PlanName;
  /** Programmatic requests (API keys, OAuth) per minute, per org. */
  requestsPerMinute: number;
  /** Jobs running at once per org; more wait in submission order. */
  concurrency: number;
  /** Jobs in one `POST /batches`; at most MAX_BATCH_SIZE, the request body's own bound. */
  maxBatchSize: number;
  /**
   * Jobs an org may have waiting for a slot (status `waiting`) at once; a submission that would go past it is refused
   * with PLAN_LIMIT (SECURITY-AUDIT finding 12: an unbounded queue is free to fill). Running jobs do not count.
   */
  maxQueuedJobs: number;
  maxRunSeconds: number;
  maxInputBytes: number;
  monthlyCredits: number;
  webhooks: boolean;
  /** "basic" job types only, or all of them. */
  jobTypes: "basic" | "all";
}

const MB = 1024 * 1024;

/**
 * The most jobs one batch request may hold on any plan: it bounds the request body the gateway parses and validates
 * before it knows the plan, so a plan override cannot raise it (PLANS_JSON above it is refused at start).
 */
export const MAX_BATCH_SIZE = 1000;

/** The one table of plan values (shown to users in docs/concepts.md). Self-hosters override entries with `PLANS_JSON`. */
export const DEFAULT_PLANS: Record<PlanName, Plan> = {
  free: { name: "free", requestsPerMinute: 10, concurrency: 2, maxBatchSize: 5, maxQueuedJobs: 100, maxRunSeconds: 120, maxInputBytes: 100 * MB, monthlyCredits: 200, webhooks: false, jobTypes: "basic" },
  starter: { name: "starter", requestsPerMinute: 30, concurrency: 5, maxBatchSize: 10, maxQueuedJobs: 1_000, maxRunSeconds: 300, maxInputBytes: 500 * MB, monthlyCredits: 1900, webhooks: true, jobTypes: "all" },
  pro: { name: "pro", requestsPerMinute: 60, concurrency: 10, maxBatchSize: 25, maxQueuedJobs: 10_000, maxRunSeconds: 600, maxInputBytes: 1024 * MB, monthlyCredits: 4900, webhooks: true, jobTypes: "all" },
  scale: { name: "scale", requestsPerMinute: 120, concurrency: 25, maxBatchSize: 50, maxQueuedJobs: 50_000, maxRunSeconds: 900, maxInputBytes: 5 * 1024 * MB, monthlyCredits: 14900, webhooks: true, jobTypes: "all" },
};

const overrideSchema = z.partialRecord(
  z.enum(PLAN_NAMES),
  z.strictObject({
    requestsPerMinute: z.number().int().positive(),
    concurrency: z.number().int().positive(),
    maxBatchSize: z.number().int().positive().max(MAX_BATCH_SIZE),
    maxQueuedJobs: z.number().int().positive(),
    maxRunSeconds: z.number().int().positive(),
    maxInputBytes: z.number().int().positive(),
    monthlyCredits: z.number().int().nonnegative(),
    webhooks: z.boolean(),
    jobTypes: z.enum(["basic", "all"]),
  }).partial(),
);

/** The plan table with `PLANS_JSON` overrides applied, e.g. `{"free":{"requestsPerMinute":100}}`. */
export function loadPlans(plansJson: string | undefined = process.env.PLANS_JSON): Record<PlanName, Plan> {
  if (!plansJson) return DEFAULT_PLANS;
  const overrides = overrideSchema.parse(JSON.parse(plansJson));
  const plans = { ...DEFAULT_PLANS };
  for (const name of PLAN_NAMES) plans[name] = { ...plans[name], ...overrides[name] };
  return plans;
}

export function isPlanName(value: string): value is PlanName {
  return (PLAN_NAMES as readonly string[]).includes(value);
}

/** The plan for a name; unknown names (a plan removed from config) fall back to free, the most restrictive. */
export function planOf(name: string, plans: Record<PlanName, Plan> = DEFAULT_PLANS): Plan {
  return isPlanName(name) ? plans[name] : plans.free;
}
