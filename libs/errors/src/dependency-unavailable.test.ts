import { describe, expect, it } from "vitest";
import { isDependencyUnavailable, toAppError } from "./app-error.js";

describe("dependency outages become SERVICE_UNAVAILABLE (503, retry later: docs/concepts.md)", () => {
  it.each([
    ["a refused socket", Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })],
    ["PostgreSQL shutting down (57P01)", Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" })],
    ["PostgreSQL starting up (57P03)", Object.assign(new Error("the database system is starting up"), { code: "57P03" })],
    ["a PostgreSQL connection failure (class 08)", Object.assign(new Error("connection failure"), { code: "08006" })],
    ["pg's lost connection", new Error("Connection terminated unexpectedly")],
  ])("maps %s", (_what, error) => {
    expect(isDependencyUnavailable(error)).toBe(true);
    expect(toAppError(error)).toMatchObject({ code: "SERVICE_UNAVAILABLE", httpStatus: 503 });
  });

  it("keeps bugs and bad SQL as INTERNAL_ERROR", () => {
    expect(toAppError(Object.assign(new Error('relation "x" does not exist'), { code: "42P01" })).code).toBe("INTERNAL_ERROR");
    expect(toAppError(new TypeError("cannot read properties of undefined")).code).toBe("INTERNAL_ERROR");
    expect(isDependencyUnavailable(undefined)).toBe(false);
  });
});
