import { validationError } from "@renderbus/errors";
import { isJobTypeName, isUploadId, JOB_TYPES } from "@renderbus/job-types";
import type { UploadStore } from "@renderbus/uploads";
import type { UploadQuota } from "./upload-quota.js";

/**
 * Checks the upload ids among jobs' inputs before the jobs are submitted, and keeps each named upload for `keepMs`
 * from now: each must be an upload of `orgId`, complete and not expired (docs/uploads.md). A job reads its uploads
 * only when a worker starts it, which may be after the upload's own 24 h, so an upload a job names is kept longer
 * (UPLOAD_KEEP_AFTER_USE_HOURS). Other inputs (URLs) are the jobs service's to check, and so are input names the job
 * type does not have and unknown types: those jobs are refused there, so their inputs are not looked up here (one
 * request could otherwise make the store read an upload once per name, tens of thousands of times under 1 MB).
 * @param prefixOf of the field names in messages: "" for one job, "jobs[i]." for the i-th job of a batch.
 * @throws AppError VALIDATION_ERROR naming the input (an upload of another org reads as an unknown one); nothing is
 * kept longer then.
 */
export async function checkUploadInputs(
  { uploads, uploadQuota }: { uploads: UploadStore; uploadQuota: UploadQuota },
  orgId: string,
  specs: { type: string; inputs: Record<string, string> }[],
  prefixOf: (index: number) => string,
  { keepMs, now = Date.now() }: { keepMs: number; now?: number },
): Promise<void> {
  const named = new Map<string, string>();
  for (const [index, spec] of specs.entries()) {
    const inputNames = new Set(isJobTypeName(spec.type) ? JOB_TYPES[spec.type].inputs.map((input) => input.name) : []);
    for (const [name, value] of Object.entries(spec.inputs)) {
      // An upload named twice (two inputs, two jobs of a batch) is looked up once.
      if (!inputNames.has(name) || !isUploadId(value) || named.has(value)) continue;
      const field = `${prefixOf(index)}inputs.${name}`;
      const upload = await uploads.describe(value);
      if (!upload || upload.orgId !== orgId) throw validationError(`${field}: upload ${value} not found`);
      if (upload.expiresAt <= now) throw validationError(`${field}: upload ${value} has expired`);
      if (!upload.complete) throw validationError(`${field}: upload ${value} is not complete (${upload.offset} of ${upload.size ?? "?"} bytes received)`);
      named.set(value, field);
    }
  }
  // Before the jobs exist: a sweep between their submission and this mark would otherwise delete what they need. A
  // sweep that took one between its check above and its mark leaves it gone: then it is refused like any expired one.
  for (const [id, field] of named) {
    await uploads.keepUntil(id, now + keepMs);
    await uploadQuota.keepUntil(orgId, id, now + keepMs);
    if (!(await uploads.describe(id))) throw validationError(`${field}: upload ${id} has expired`);
  }
}
