import { appendToStream, enqueueOutbox } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import { MINIMUM_PRICE } from "@renderbus/job-types";
import { planOf } from "@renderbus/plans";
import { planLimit, validationError } from "@renderbus/errors";
import type { AuthContext } from "@renderbus/rpc";
import type { jobs } from "@renderbus/contracts";
import type { JobsDeps } from "../deps.js";
import { withIdempotency } from "../idempotency/with-idempotency.js";
import { decide } from "../job/decide.js";
import { commitJobEvents } from "../job/job-store.js";
import { validateJobSpec } from "../submit-job/validate-job-spec.js";
import { decideCreateBatch } from "./batch.js";
import { batchMessage } from "./batch-view.js";

/**
 * SubmitBatch: every job is validated before anything is stored (all or nothing), the org's queue must have room for
 * every job (`maxQueuedJobs`), one credit check covers the sum of minimum prices, and the batch with all its jobs is
 * written in one transaction.
 * @throws AppError VALIDATION_ERROR (naming `jobs[i].field`), INVALID_JOB_TYPE, PLAN_LIMIT, INSUFFICIENT_CREDITS, ...
 */
export async function submitBatch(deps: JobsDeps, auth: AuthContext, request: jobs.SubmitBatchRequest): Promise<jobs.Batch> {
  const plan = planOf(auth.plan, deps.plans);
  const count = request.jobs.length;
  if (count < 1) throw validationError("jobs: must contain at least 1 job");
  if (count > plan.maxBatchSize) throw planLimit(`A batch on the ${plan.name} plan holds at most ${plan.maxBatchSize} jobs`);
  const specs = request.jobs.map((spec, index) => validateJobSpec(spec, plan, `jobs[${index}]`));

  const { response } = await withIdempotency(
    deps.db,
    { orgId: auth.orgId, key: request.idempotencyKey, operation: "SubmitBatch", body: request.jobs, ...deps.idempotency },
    async (recordResponse) => {
      // All or nothing here too: a batch that would overfill the org's queue is refused whole.
      await deps.queuedJobs.ensureRoom(auth.orgId, plan, count);
      await deps.credits.ensureBalance(auth.orgId, MINIMUM_PRICE * count);
      const batchId = newId("batch");
      const jobIds = specs.map(() => newId("job"));
      const now = Date.now();
      const limits = { maxRunSeconds: plan.maxRunSeconds, maxInputBytes: plan.maxInputBytes, concurrency: plan.concurrency };
      const batch = await deps.db.transaction().execute(async (trx) => {
        const created = decideCreateBatch({ batchId, orgId: auth.orgId, jobIds, now });
        const [stored] = await appendToStream(trx, batchId, 0, created, now);
        await enqueueOutbox(
          trx,
          [{ messageId: stored!.eventId, subject: "jobs.events.batch.created", body: created[0]!.data, headers: { "Rb-Event-Type": "batch.created", "Rb-Org-Id": auth.orgId } }],
          now,
        );
        await trx
          .insertInto("batch_views")
          .values({ id: batchId, org_id: auth.orgId, job_ids: JSON.stringify(jobIds), job_count: count, status: "running", created_at: now, completed_at: null })
          .execute();
        for (const [index, spec] of specs.entries()) {
          const events = decide(undefined, {
            type: "QueueJob",
            jobId: jobIds[index]!,
            orgId: auth.orgId,
            batchId,
            jobType: spec.type,
            inputs: spec.inputs,
            params: spec.params,
            metadata: spec.metadata,
            plan: plan.name,
            limits,
            submittedBy: auth.userId,
            now,
          });
          await commitJobEvents(trx, { state: undefined, version: 0 }, events, now);
        }
        const row = await trx.selectFrom("batch_views").selectAll().where("id", "=", batchId).executeTakeFirstOrThrow();
        const message = batchMessage(row);
        await recordResponse(trx, message);
        return message;
      });
      deps.scheduler.requestPass(auth.orgId);
      return batch;
    },
  );
  return response;
}
