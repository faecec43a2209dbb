/**
 * The parts of an ApiError (api.ts) that rules about the API's refusals read. Read by shape, not `instanceof`, so
 * the files with those rules need nothing of the browser's and run in the unit tests as they are.
 */
export interface Refusal {
  status: number;
  code: string;
  message: string;
}

/** The refusal `error` is, or undefined for anything that is not one. */
export function refusalOf(error: unknown): Refusal | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const { status, code, message } = error as Partial<Refusal>;
  return typeof status === "number" && typeof code === "string" && typeof message === "string" ? { status, code, message } : undefined;
}
