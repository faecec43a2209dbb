import { validationError } from "@renderbus/errors";
import { isUploadId } from "@renderbus/job-types";
import type { UploadStore } from "@renderbus/uploads";

/**
 * Checks the upload ids among jobs' inputs before the jobs are submitted: each must be an upload of `orgId`,
 * complete and not expired (docs/uploads.md). Other inputs (URLs) are the jobs service's to check.
 * @param prefix of the field names in messages: "" for one job, "jobs[i]." for the i-th job of a batch.
 * @throws AppError VALIDATION_ERROR naming the input (an upload of another org reads as an unknown one).
 */
export async function checkUploadInputs(
  uploads: UploadStore,
  orgId: string,
  specs: { inputs: Record<string, string> }[],
  prefixOf: (index: number) => string,
  now = Date.now(),
): Promise<void> {
  for (const [index, spec] of specs.entries()) {
    for (const [name, value] of Object.entries(spec.inputs)) {
      if (!isUploadId(value)) continue;
      const field = `${prefixOf(index)}inputs.${name}`;
      const upload = await uploads.describe(value);
      if (!upload || upload.orgId !== orgId) throw validationError(`${field}: upload ${value} not found`);
      if (upload.expiresAt <= now) throw validationError(`${field}: upload ${value} has expired`);
      if (!upload.complete) throw validationError(`${field}: upload ${value} is not complete (${upload.offset} of ${upload.size ?? "?"} bytes received)`);
    }
  }
}
