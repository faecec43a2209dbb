import { describe, expect, it } from "vitest";
import { DEFAULT_PLANS, isPlanName, loadPlans, MAX_BATCH_SIZE, planOf } from "./index.js";

describe("loadPlans", () => {
  it("returns the documented plan table (docs/concepts.md) without PLANS_JSON", () => {
    expect(loadPlans(undefined)).toEqual(DEFAULT_PLANS);
    expect(loadPlans("")).toEqual(DEFAULT_PLANS);
    expect(DEFAULT_PLANS.pro).toMatchObject({ requestsPerMinute: 60, concurrency: 10, maxBatchSize: 25, webhooks: true });
    expect(DEFAULT_PLANS.free).toMatchObject({ requestsPerMinute: 10, concurrency: 2, webhooks: false, jobTypes: "basic" });
  });

  it("holds the plan table row by row: requests, concurrency, batch size, run time, input size, credits, webhooks, job types", () => {
    const MB = 1024 * 1024;
    const rows = (["free", "starter", "pro", "scale"] as const).map((name) => {
      const plan = DEFAULT_PLANS[name];
      return [plan.requestsPerMinute, plan.concurrency, plan.maxBatchSize, plan.maxRunSeconds, plan.maxInputBytes / MB, plan.monthlyCredits, plan.webhooks, plan.jobTypes];
    });
    expect(rows).toEqual([
      [10, 2, 5, 120, 100, 200, false, "basic"],
      [30, 5, 10, 300, 500, 1900, true, "all"],
      [60, 10, 25, 600, 1024, 4900, true, "all"],
      [120, 25, 50, 900, 5 * 1024, 14_900, true, "all"],
    ]);
  });

  it("caps the jobs waiting for a slot per org: free 100, starter 1,000, pro 10,000, scale 50,000 (SECURITY-AUDIT finding 12)", () => {
    expect([DEFAULT_PLANS.free, DEFAULT_PLANS.starter, DEFAULT_PLANS.pro, DEFAULT_PLANS.scale].map((plan) => plan.maxQueuedJobs)).toEqual([100, 1000, 10_000, 50_000]);
    expect(loadPlans('{"free":{"maxQueuedJobs":5}}').free.maxQueuedJobs).toBe(5);
    expect(() => loadPlans('{"free":{"maxQueuedJobs":0}}')).toThrow();
  });

  it("applies PLANS_JSON overrides field by field, leaving the rest and the defaults untouched", () => {
    const plans = loadPlans('{"free":{"requestsPerMinute":100},"scale":{"webhooks":false,"monthlyCredits":0}}');
    expect(plans.free).toEqual({ ...DEFAULT_PLANS.free, requestsPerMinute: 100 });
    expect(plans.scale).toEqual({ ...DEFAULT_PLANS.scale, webhooks: false, monthlyCredits: 0 });
    expect(plans.pro).toEqual(DEFAULT_PLANS.pro);
    expect(DEFAULT_PLANS.free.requestsPerMinute).toBe(10);
  });

  it("lets a plan's batch size go up to the request's own bound, 1,000 jobs", () => {
    expect(MAX_BATCH_SIZE).toBe(1000);
    expect(loadPlans('{"scale":{"maxBatchSize":1000}}').scale.maxBatchSize).toBe(1000);
  });

  it("reads PLANS_JSON from the environment by default", () => {
    const previous = process.env.PLANS_JSON;
    process.env.PLANS_JSON = '{"starter":{"concurrency":7}}';
    try {
      expect(loadPlans().starter.concurrency).toBe(7);
    } finally {
      if (previous === undefined) delete process.env.PLANS_JSON;
      else process.env.PLANS_JSON = previous;
    }
  });

  it.each([
    ["not JSON", "{free:"],
    ["an unknown plan", '{"enterprise":{"concurrency":100}}'],
    ["an unknown field", '{"free":{"seats":3}}'],
    ["a negative limit", '{"free":{"concurrency":-1}}'],
    ["a wrong type", '{"pro":{"webhooks":"yes"}}'],
    ["an unknown job type set", '{"pro":{"jobTypes":"some"}}'],
    ["a batch size above what a batch request may hold (1,000)", '{"scale":{"maxBatchSize":1001}}'],
  ])("rejects an override with %s", (_what, json) => {
    expect(() => loadPlans(json)).toThrow();
  });
});

describe("planOf", () => {
  it("finds a plan by name and falls back to free for an unknown one", () => {
    expect(planOf("pro").name).toBe("pro");
    expect(planOf("gold").name).toBe("free");
    expect(isPlanName("scale")).toBe(true);
    expect(isPlanName("gold")).toBe(false);
  });
});
