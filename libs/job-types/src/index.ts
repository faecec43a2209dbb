export * from "./job-types.js";
export * from "./params-schemas.js";
export * from "./price.js";
export { parseJobParams, validateInputs } from "./validate-job.js";
