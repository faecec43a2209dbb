import { isId } from "@renderbus/ids";
import type { z } from "zod";
import { JOB_TYPES, type JobTypeName } from "./job-types.js";

function describeIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "too_big":
      if (issue.origin === "string") return `must be at most ${String(issue.maximum)} characters`;
      return `must be ${issue.inclusive === false ? "<" : "<="} ${String(issue.maximum)}`;
    case "too_small":
      if (issue.origin === "string") return `must be at least ${String(issue.minimum)} characters`;
      return `must be ${issue.inclusive === false ? ">" : ">="} ${String(issue.minimum)}`;
    case "invalid_type":
      return issue.input === undefined ? "is required" : `must be ${issue.expected === "int" ? "an integer" : `a ${issue.expected}`}`;
    case "invalid_value":
      return `must be one of ${issue.values.map(String).join(", ")}`;
    default:
      return issue.message;
  }
}

function firstIssueMessage(error: z.ZodError, prefix: string): string {
  const issue = error.issues[0];
  if (!issue) return `${prefix}: is invalid`;
  if (issue.code === "unrecognized_keys") return `${prefix}.${issue.keys[0] ?? ""}: is not allowed`;
  const path = [prefix, ...issue.path.map(String)].join(".");
  return `${path}: ${describeIssue(issue)}`;
}

/**
 * Validates and fills in defaults for a job's params. When `inputs` are given, cross-field rules that involve them
 * are checked too (a watermark needs a text or an image input).
 */
export function parseJobParams(
  type: JobTypeName,
  params: unknown,
  inputs?: Record<string, string>,
): { ok: true; params: Record<string, unknown> } | { ok: false; message: string } {
  const result = JOB_TYPES[type].paramsSchema.safeParse(params ?? {}, { reportInput: true });
  if (!result.success) return { ok: false, message: firstIssueMessage(result.error, "params") };
  const parsed = result.data as Record<string, unknown>;
  if (type === "watermark.add" && inputs && parsed.text === undefined && !inputs.image) {
    return { ok: false, message: "params.text: is required when no image input is given" };
  }
  return { ok: true, params: parsed };
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}

/** An upload id (`upload_<ULID>`, docs/uploads.md): a job input may name a finished upload instead of a URL. */
export function isUploadId(value: string): boolean {
  return isId("upload", value);
}

/**
 * Checks a job's inputs: every required input present, no unknown input, each an http(s) URL or an upload id (the
 * gateway checks the upload is the caller's, complete and unexpired; the worker reads it from the upload store).
 */
export function validateInputs(type: JobTypeName, inputs: unknown): { ok: true } | { ok: false; message: string } {
  const value = inputs ?? {};
  if (typeof value !== "object" || Array.isArray(value)) return { ok: false, message: "inputs: must be an object" };
  const given = value as Record<string, unknown>;
  const declared = JOB_TYPES[type].inputs;
  for (const name of Object.keys(given)) {
    if (!declared.some((input) => input.name === name)) {
      return { ok: false, message: `inputs.${name}: is not an input of ${type}` };
    }
  }
  for (const input of declared) {
    const url = given[input.name];
    if (url === undefined || url === null || url === "") {
      if (input.required) return { ok: false, message: `inputs.${input.name}: is required` };
      continue;
    }
    if (typeof url !== "string" || url.length > 2048 || !(isHttpUrl(url) || isUploadId(url))) {
      return { ok: false, message: `inputs.${input.name}: must be an http or https URL or an upload id (upload_...)` };
    }
  }
  return { ok: true };
}
