export * from "./job-types.js";
export * from "./params-schemas.js";
export * from "./price.js";
export { isUploadId, parseJobParams, validateInputs } from "./validate-job.js";
export * from "./job-statuses.js";
