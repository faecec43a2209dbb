import { AppError } from "@renderbus/errors";

/**
 * How a call ended, as one string to assert on: "ok" when it resolved, else the AppError's code (with `: message`
 * when `message` is set, for assertions on what the caller is told) or any other error as text.
 */
export async function outcomeOf(promise: Promise<unknown>, { message = false }: { message?: boolean } = {}): Promise<string> {
  try {
    await promise;
    return "ok";
  } catch (error) {
    if (!(error instanceof AppError)) return String(error);
    return message ? `${error.code}: ${error.message}` : error.code;
  }
}
