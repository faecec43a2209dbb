import { describe, expect, it } from "vitest";
import { authErrorEnvelope } from "./auth-error-envelope.js";

const json = "application/json";
const body = (value: unknown) => Buffer.from(JSON.stringify(value));
const answer = (pathname: string, status: number, value: unknown, contentType: string | null = json) => {
  const error = authErrorEnvelope(pathname, status, contentType, typeof value === "string" ? Buffer.from(value) : body(value));
  return error && { status: error.httpStatus, body: error.toBody() };
};

describe("Better Auth's errors in the API's envelope", () => {
  it("restates a refusal with the API's code and status, keeping the message a person needs", () => {
    expect(answer("/auth/sign-in/email", 401, { code: "INVALID_EMAIL_OR_PASSWORD", message: "Invalid email or password" })).toEqual({
      status: 401,
      body: { error: { code: "UNAUTHORIZED", message: "Invalid email or password" } },
    });
    expect(answer("/auth/sign-up/email", 422, { code: "USER_ALREADY_EXISTS", message: "User already exists" })).toEqual({
      status: 409,
      body: { error: { code: "CONFLICT", message: "User already exists" } },
    });
    expect(answer("/auth/sign-up/email", 400, { code: "PASSWORD_TOO_SHORT", message: "Password too short" })?.body.error.code).toBe("VALIDATION_ERROR");
    expect(answer("/auth/organization/set-active", 403, { message: "not a member" })?.body.error.code).toBe("FORBIDDEN");
    expect(answer("/auth/x", 429, {})?.body.error.code).toBe("RATE_LIMITED");
    expect(answer("/auth/x", 418, { message: "teapot" })).toEqual({ status: 400, body: { error: { code: "VALIDATION_ERROR", message: "teapot" } } });
  });

  it("says nothing more than INTERNAL_ERROR about a failure of the auth service", () => {
    expect(answer("/auth/sign-in/email", 500, { message: "relation \"user\" does not exist", stack: "at ..." })).toEqual({
      status: 500,
      body: { error: { code: "INTERNAL_ERROR", message: "Internal error" } },
    });
    expect(answer("/auth/sign-in/email", 502, "<html>bad gateway</html>", "text/html")?.body.error.code).toBe("INTERNAL_ERROR");
    expect(answer("/auth/sign-in/email", 503, {})).toEqual({ status: 503, body: { error: { code: "SERVICE_UNAVAILABLE", message: "The auth service is unavailable; retry later" } } });
  });

  it("keeps the message of the auth service's own 503 (a mail server that refused a confirmation email)", () => {
    expect(answer("/auth/send-verification-email", 503, { code: "SERVICE_UNAVAILABLE", message: "The confirmation email could not be sent; retry later" })).toEqual({
      status: 503,
      body: { error: { code: "SERVICE_UNAVAILABLE", message: "The confirmation email could not be sent; retry later" } },
    });
  });

  it("gives a refusal without a message the code's plain one", () => {
    expect(answer("/auth/x", 400, "not json")).toEqual({ status: 400, body: { error: { code: "VALIDATION_ERROR", message: "The request was refused" } } });
    expect(answer("/auth/x", 400, ["a"])?.body.error.message).toBe("The request was refused");
    expect(answer("/auth/x", 404, "Not Found", "text/plain")).toEqual({ status: 404, body: { error: { code: "NOT_FOUND", message: "The request was refused" } } });
  });

  it("leaves successes and OAuth's own error bodies alone", () => {
    expect(answer("/auth/sign-in/email", 200, { token: "x" })).toBeUndefined();
    expect(answer("/auth/sign-in/social", 302, "")).toBeUndefined();
    expect(answer("/auth/oauth2/token", 400, { error: "invalid_grant", error_description: "expired" })).toBeUndefined();
    expect(answer("/auth/mcp/register", 400, { error: "invalid_client_metadata" })).toBeUndefined();
    expect(answer("/.well-known/oauth-authorization-server", 404, { message: "no" })).toBeUndefined();
  });
});
