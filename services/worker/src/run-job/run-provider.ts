import { parseJobParams, type JobTypeName } from "@renderbus/job-types";
import { inputError } from "../job-failure.js";
import { PROVIDERS, type ProviderContext, type ProviderOutput } from "../providers/index.js";

/**
 * Runs the provider of a job type on already downloaded inputs. Params are validated again (with defaults filled
 * in) because the work message crossed a process boundary; the jobs service validated them at submission.
 * @throws JobFailure (INPUT_ERROR, PROVIDER_ERROR, PROVIDER_TIMEOUT) or JobCancelledError.
 */
export async function runProvider(
  type: JobTypeName,
  context: Omit<ProviderContext<unknown>, "params"> & { params: unknown },
): Promise<ProviderOutput> {
  const parsed = parseJobParams(type, context.params);
  if (!parsed.ok) throw inputError(parsed.message);
  const provider = PROVIDERS[type] as { run(context: ProviderContext<unknown>): Promise<ProviderOutput> };
  return provider.run({ ...context, params: parsed.params });
}
