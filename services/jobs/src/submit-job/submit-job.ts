import { newId } from "@renderbus/ids";
import { MINIMUM_PRICE } from "@renderbus/job-types";
import { planOf } from "@renderbus/plans";
import type { AuthContext } from "@renderbus/rpc";
import type { jobs } from "@renderbus/contracts";
import type { JobsDeps } from "../deps.js";
import { withIdempotency } from "../idempotency/with-idempotency.js";
import { decide } from "../job/decide.js";
import { commitJobEvents } from "../job/job-store.js";
import { jobMessage } from "../job/job-view.js";
import { validateJobSpec } from "./validate-job-spec.js";

/**
 * SubmitJob: validate against the catalog and the plan, check the org's queue has room (`maxQueuedJobs`) and the
 * balance covers the minimum price, then append JobQueued (projection + outbox in the same transaction) and ask the
 * scheduler for a pass.
 * @throws AppError INVALID_JOB_TYPE, VALIDATION_ERROR, PLAN_LIMIT, INSUFFICIENT_CREDITS, IDEMPOTENCY_KEY_REUSED, CONFLICT.
 */
export async function submitJob(deps: JobsDeps, auth: AuthContext, request: jobs.SubmitJobRequest): Promise<jobs.SubmitJobResponse> {
  const plan = planOf(auth.plan, deps.plans);
  const spec = validateJobSpec(request.job, plan);
  const { response, replayed } = await withIdempotency(
    deps.db,
    { orgId: auth.orgId, key: request.idempotencyKey, operation: "SubmitJob", body: request.job, ...deps.idempotency },
    async (recordResponse) => {
      await deps.queuedJobs.ensureRoom(auth.orgId, plan, 1);
      await deps.credits.ensureBalance(auth.orgId, MINIMUM_PRICE);
      const now = Date.now();
      const events = decide(undefined, {
        type: "QueueJob",
        jobId: newId("job"),
        orgId: auth.orgId,
        jobType: spec.type,
        inputs: spec.inputs,
        params: spec.params,
        metadata: spec.metadata,
        plan: plan.name,
        limits: { maxRunSeconds: plan.maxRunSeconds, maxInputBytes: plan.maxInputBytes, concurrency: plan.concurrency },
        submittedBy: auth.userId,
        now,
      });
      // Without an Idempotency-Key there is no response to store with the job: one (shared) statement does it all.
      const job =
        request.idempotencyKey === undefined
          ? jobMessage(await deps.jobCreator.create({ events, now }))
          : await deps.db.transaction().execute(async (trx) => {
              const message = jobMessage((await commitJobEvents(trx, { state: undefined, version: 0 }, events, now))!);
              await recordResponse(trx, message);
              return message;
            });
      deps.scheduler.requestPass(auth.orgId);
      return job;
    },
  );
  return { job: response, replayed };
}
