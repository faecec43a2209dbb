import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  AppError,
  conflict,
  ERROR_CODES,
  forbidden,
  httpStatusOf,
  insufficientCredits,
  isErrorCode,
  notFound,
  planLimit,
  serviceUnavailable,
  toAppError,
  unauthorized,
  UNAUTHORIZED_MESSAGE,
  validationError,
} from "./index.js";

describe("error codes", () => {
  it("maps every error code to its documented HTTP status (docs/concepts.md#errors)", () => {
    // The table as the docs state it: each `CODE` followed by its status, in the "Errors" section.
    const concepts = readFileSync(join(import.meta.dirname, "..", "..", "..", "docs", "concepts.md"), "utf8");
    const section = concepts.slice(concepts.indexOf("\n## Errors\n"), concepts.indexOf("\n## ", concepts.indexOf("\n## Errors\n") + 1));
    const documented = Object.fromEntries([...section.matchAll(/`([A-Z_]+)` (\d{3})/g)].map(([, code, status]) => [code, Number(status)]));
    expect(Object.keys(documented)).toHaveLength(13);
    expect(ERROR_CODES).toEqual(documented);
    expect(httpStatusOf("RATE_LIMITED")).toBe(429);
  });

  it("recognises codes and nothing else", () => {
    expect(isErrorCode("CONFLICT")).toBe(true);
    expect(isErrorCode("conflict")).toBe(false);
    expect(isErrorCode("toString")).toBe(false);
  });
});

describe("AppError", () => {
  it("carries its code, HTTP status and the documented error body", () => {
    const error = new AppError("CONFLICT", "Job is already completed");
    expect(error.httpStatus).toBe(409);
    expect(error.toBody()).toEqual({ error: { code: "CONFLICT", message: "Job is already completed" } });
  });

  it("has helpers with the right codes and the fixed 401 message", () => {
    expect(unauthorized()).toMatchObject({ code: "UNAUTHORIZED", message: UNAUTHORIZED_MESSAGE, httpStatus: 401 });
    expect(notFound("Job")).toMatchObject({ code: "NOT_FOUND", message: "Job not found", httpStatus: 404 });
    expect(validationError("type is required").httpStatus).toBe(400);
    expect(conflict("x").code).toBe("CONFLICT");
    expect(planLimit("x").httpStatus).toBe(403);
    expect(forbidden("x").code).toBe("FORBIDDEN");
    expect(insufficientCredits().httpStatus).toBe(402);
    expect(serviceUnavailable().httpStatus).toBe(503);
  });

  it("keeps an AppError and turns anything else into INTERNAL_ERROR without its message", () => {
    const known = conflict("nope");
    expect(toAppError(known)).toBe(known);
    const unknown = toAppError(new Error("password=hunter2"));
    expect(unknown).toMatchObject({ code: "INTERNAL_ERROR", message: "Internal error", httpStatus: 500 });
    expect(toAppError("a string").code).toBe("INTERNAL_ERROR");
  });
});
