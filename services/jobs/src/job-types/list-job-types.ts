import { JOB_TYPES, jobTypeAvailableOn, type JobTypeName } from "@renderbus/job-types";
import { PLAN_NAMES, type Plan, type PlanName } from "@renderbus/plans";
import type { jobs } from "@renderbus/contracts";

/** ListJobTypes: every type with its params JSON Schema, the plans that include it and its price rule. */
export function listJobTypes(plans: Record<PlanName, Plan>): jobs.ListJobTypesResponse {
  return {
    jobTypes: Object.values(JOB_TYPES).map((definition) => ({
      name: definition.name,
      description: definition.description,
      inputs: definition.inputs.map((input) => input.name),
      paramsSchema: definition.paramsJsonSchema,
      plans: PLAN_NAMES.filter((plan) => jobTypeAvailableOn(definition.name as JobTypeName, plans[plan].jobTypes)),
      output: definition.output,
      price: definition.price,
    })),
  };
}
