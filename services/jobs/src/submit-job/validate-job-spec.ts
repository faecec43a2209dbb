import { AppError, planLimit, validationError } from "@renderbus/errors";
import { isJobTypeName, jobTypeAvailableOn, parseJobParams, validateInputs, type JobTypeName } from "@renderbus/job-types";
import type { Plan } from "@renderbus/plans";
import type { jobs } from "@renderbus/contracts";

/** A job spec that passed validation, with params defaults filled in. */
export interface ValidJobSpec {
  type: JobTypeName;
  inputs: Record<string, string>;
  params: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

/** Client metadata is stored on the job and echoed back; it is not a place for payloads. */
const MAX_METADATA_BYTES = 16 * 1024;

/**
 * Validates one job spec against the job type catalog and the caller's plan. `field` prefixes messages for batch
 * items (`jobs[2].params.crf: ...`).
 * @throws AppError INVALID_JOB_TYPE, VALIDATION_ERROR (naming the field) or PLAN_LIMIT.
 */
export function validateJobSpec(spec: jobs.JobSpec | undefined, plan: Plan, field = ""): ValidJobSpec {
  const at = (message: string) => (field ? `${field}.${message}` : message);
  if (!spec) throw validationError(at("type: is required"));
  if (!spec.type) throw validationError(at("type: is required"));
  if (!isJobTypeName(spec.type)) throw new AppError("INVALID_JOB_TYPE", at(`type: unknown job type "${spec.type.slice(0, 64)}"`));
  const inputs = validateInputs(spec.type, spec.inputs ?? {});
  if (!inputs.ok) throw validationError(at(inputs.message));
  const validInputs = (spec.inputs ?? {}) as Record<string, string>;
  const params = parseJobParams(spec.type, spec.params ?? {}, validInputs);
  if (!params.ok) throw validationError(at(params.message));
  const metadata = spec.metadata ?? {};
  if (Buffer.byteLength(JSON.stringify(metadata)) > MAX_METADATA_BYTES) {
    throw validationError(at(`metadata: must be at most ${MAX_METADATA_BYTES} bytes of JSON`));
  }
  if (!jobTypeAvailableOn(spec.type, plan.jobTypes)) {
    throw planLimit(`Job type ${spec.type} is not available on the ${plan.name} plan`);
  }
  return { type: spec.type, inputs: validInputs, params: params.params, metadata };
}
