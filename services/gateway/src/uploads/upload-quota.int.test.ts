import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testInfra } from "@renderbus/testing";
import { UploadQuota, type UploadAllowance } from "./upload-quota.js";

const HOUR = 3_600_000;
const allowance: UploadAllowance = { maxBytes: 3000, maxUploads: 3, plan: "free" };

describe("UploadQuota (Redis)", () => {
  let redis: Redis;
  let now = 1_800_000_000_000;
  const quota = () => new UploadQuota(redis, { prefix: `rb:test:${randomUUID()}:uploads`, now: () => now });
  beforeAll(() => {
    redis = new Redis(testInfra().redisUrl, { maxRetriesPerRequest: 2 });
  });
  afterAll(() => redis?.disconnect());

  it("stops counting an upload once it expired, unless a job kept it longer", async () => {
    const uploads = quota();
    await uploads.reserve("org_a", "upload_1", 1000, now + 24 * HOUR, allowance);
    await uploads.reserve("org_a", "upload_2", 1000, now + 24 * HOUR, allowance);
    await uploads.reserve("org_a", "upload_3", 1000, now + 24 * HOUR, allowance);
    await expect(uploads.reserve("org_a", "upload_4", 1, now + 24 * HOUR, allowance)).rejects.toMatchObject({ code: "PLAN_LIMIT" });
    // A job named upload_1: kept a week; a shorter keep later does not shorten it.
    await uploads.keepUntil("org_a", "upload_1", now + 168 * HOUR);
    await uploads.keepUntil("org_a", "upload_1", now + 48 * HOUR);

    now += 24 * HOUR;
    await uploads.reserve("org_a", "upload_4", 2000, now + 24 * HOUR, allowance);
    await expect(uploads.reserve("org_a", "upload_5", 1, now + 24 * HOUR, allowance)).rejects.toMatchObject({ code: "PLAN_LIMIT" });
    now += 168 * HOUR;
    await uploads.reserve("org_a", "upload_5", 3000, now + 24 * HOUR, allowance);
  });

  it("counts a settled upload at its real size, forgets a released one, and reserves a retried id once", async () => {
    const uploads = quota();
    await uploads.reserve("org_a", "upload_d", 3000, now + HOUR, allowance);
    await uploads.reserve("org_a", "upload_d", 3000, now + HOUR, allowance); // the same request again
    await uploads.settle("org_a", "upload_d", 10);
    await uploads.reserve("org_a", "upload_e", 2990, now + HOUR, allowance);
    await expect(uploads.reserve("org_a", "upload_f", 1, now + HOUR, allowance)).rejects.toMatchObject({ code: "PLAN_LIMIT" });
    await uploads.release("org_a", "upload_e");
    // A settle after the release does not bring it back.
    await uploads.settle("org_a", "upload_e", 2990);
    await uploads.reserve("org_a", "upload_f", 2990, now + HOUR, allowance);
  });

  it("lets its keys expire with the last upload they hold", async () => {
    const prefix = `rb:test:${randomUUID()}:uploads`;
    const uploads = new UploadQuota(redis, { prefix });
    await uploads.reserve("org_a", "upload_1", 10, Date.now() + 5_000, allowance);
    for (const key of [`${prefix}:org_a`, `${prefix}:org_a:bytes`]) {
      const ttl = await redis.pttl(key);
      expect(ttl).toBeGreaterThan(5_000);
      expect(ttl).toBeLessThanOrEqual(65_000);
    }
  });
});
