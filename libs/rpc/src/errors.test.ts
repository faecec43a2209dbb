import { Metadata, status, type ServiceError } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { AppError } from "@renderbus/errors";
import { fromServiceError, toServiceError } from "./errors.js";

/** What a client sees of a server's error: the status, the message and the trailing metadata. */
const overTheWire = (error: AppError): ServiceError => Object.assign(new Error(error.message), toServiceError(error)) as ServiceError;

const withMetadata = (entries: Record<string, string>): ServiceError => {
  const metadata = new Metadata();
  for (const [key, value] of Object.entries(entries)) metadata.set(key, value);
  return Object.assign(new Error("x"), { code: status.RESOURCE_EXHAUSTED, details: "slow down", metadata }) as ServiceError;
};

describe("errors across gRPC", () => {
  it("keeps the exact code and message", () => {
    const back = fromServiceError(overTheWire(new AppError("PLAN_LIMIT", "Your plan allows 2")));
    expect([back.code, back.message]).toEqual(["PLAN_LIMIT", "Your plan allows 2"]);
  });

  it("carries a RATE_LIMITED error's wait, so the gateway can answer Retry-After", () => {
    const back = fromServiceError(overTheWire(new AppError("RATE_LIMITED", "One recover per endpoint every 60 s", { retryAfterSeconds: 60 })));
    expect(back.code).toBe("RATE_LIMITED");
    expect(back.details).toEqual({ retryAfterSeconds: 60 });
  });

  it("carries no other detail, and no wait on other codes", () => {
    const back = fromServiceError(overTheWire(new AppError("CONFLICT", "busy", { retryAfterSeconds: 60, secret: "x" })));
    expect(back.details).toBeUndefined();
  });

  it("does not believe a wait that is not a whole number of seconds from 1 to a day", () => {
    for (const value of ["0", "-5", "1.5", "86401", "1e9", "soon", ""]) {
      const back = fromServiceError(withMetadata({ "rb-error-code": "RATE_LIMITED", "rb-retry-after": value }));
      expect([back.code, back.details]).toEqual(["RATE_LIMITED", undefined]);
    }
    expect(fromServiceError(withMetadata({ "rb-error-code": "RATE_LIMITED", "rb-retry-after": "86400" })).details).toEqual({ retryAfterSeconds: 86400 });
  });
});
