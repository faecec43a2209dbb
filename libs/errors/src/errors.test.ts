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
    expect(ERROR_CODES).toEqual({
      UNAUTHORIZED: 401,
      FORBIDDEN: 403,
      PLAN_LIMIT: 403,
      VALIDATION_ERROR: 400,
      INVALID_JOB_TYPE: 400,
      INSUFFICIENT_CREDITS: 402,
      NOT_FOUND: 404,
      CONFLICT: 409,
      IDEMPOTENCY_KEY_REUSED: 422,
      RATE_LIMITED: 429,
      PAYLOAD_TOO_LARGE: 413,
      INTERNAL_ERROR: 500,
      SERVICE_UNAVAILABLE: 503,
    });
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
