import type { z } from "zod";
import { validationError } from "@renderbus/errors";

/** Parses one part of a request with its schema; the error message names the offending field. */
export function parseRequestPart<T>(schema: z.ZodType<T> | undefined, value: unknown, part: "body" | "query" | "path"): T {
  if (!schema) return undefined as T;
  const result = schema.safeParse(value ?? (part === "body" ? undefined : {}));
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = issue.path.length > 0 ? issue.path.join(".") : part;
  const message =
    issue.code === "unrecognized_keys" ? `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.join(", ")}` : issue.message;
  throw validationError(`${part === "body" ? "" : `${part} `}${field}: ${message}`.trim());
}
