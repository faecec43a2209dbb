import type { z } from "zod";
import { validationError } from "@renderbus/errors";

/** Parses one part of a request with its schema; the error message names the offending field. */
export function parseRequestPart<T>(schema: z.ZodType<T> | undefined, value: unknown, part: "body" | "query" | "path"): T {
  if (!schema) return undefined as T;
  const nul = pathOfNul(value);
  if (nul !== undefined) throw validationError(`${part === "body" ? "" : `${part} `}${nul.join(".") || part}: must not contain NUL characters`.trim());
  // An absent body stays absent (routes without one accept that); `null` is a body, and only a JSON object is valid.
  const result = schema.safeParse(part === "body" ? value : (value ?? {}));
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = issue.path.length > 0 ? issue.path.join(".") : part;
  const message =
    issue.code === "unrecognized_keys" ? `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.join(", ")}` : issue.message;
  throw validationError(`${part === "body" ? "" : `${part} `}${field}: ${message}`.trim());
}

/**
 * The path of the first string (or key) holding U+0000, which PostgreSQL text and jsonb cannot store: without this
 * check such a value reaches the database and fails there as an internal error instead of a 400.
 */
function pathOfNul(value: unknown): (string | number)[] | undefined {
  // Iterative, so deeply nested input cannot exhaust the stack.
  const pending: { value: unknown; path: (string | number)[] }[] = [{ value, path: [] }];
  while (pending.length > 0) {
    const { value: current, path } = pending.pop()!;
    if (typeof current === "string") {
      if (current.includes("\u0000")) return path;
    } else if (Array.isArray(current)) {
      current.forEach((item, index) => pending.push({ value: item, path: [...path, index] }));
    } else if (current !== null && typeof current === "object") {
      for (const [key, item] of Object.entries(current)) {
        if (key.includes("\u0000")) return [...path, key];
        pending.push({ value: item, path: [...path, key] });
      }
    }
  }
  return undefined;
}
