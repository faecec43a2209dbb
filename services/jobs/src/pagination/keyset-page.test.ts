import { describe, expect, it } from "vitest";
import { AppError } from "@renderbus/errors";
import { decodeCursor, encodeCursor, pageSize } from "./keyset-page.js";

const forged = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

describe("keyset cursors", () => {
  it("round-trip the position of the last row", () => {
    expect(decodeCursor(encodeCursor({ createdAt: 1_700_000_000_000, id: "job_01ABC" }))).toEqual({ createdAt: 1_700_000_000_000, id: "job_01ABC" });
  });

  it.each([
    ["not base64 json", "%%%"],
    ["a wrong shape", forged({ createdAt: 1, id: "job_1" })],
    ["a time beyond bigint", forged([1e300, "job_1"])],
    ["a negative time", forged([-1, "job_1"])],
    ["a fractional time", forged([1.5, "job_1"])],
    ["an id with a NUL", forged([1, "job_\u0000"])],
    ["an id that is no id", forged([1, "' or 1=1 --"])],
  ])("refuse %s with VALIDATION_ERROR", (_name, cursor) => {
    expect(() => decodeCursor(cursor)).toThrow(AppError);
    expect(() => decodeCursor(cursor)).toThrow("cursor: is invalid");
  });
});

describe("pageSize", () => {
  it("defaults to 50 and accepts 1..100", () => {
    expect(pageSize(undefined)).toBe(50);
    expect(pageSize(0)).toBe(50);
    expect(pageSize(100)).toBe(100);
    expect(() => pageSize(101)).toThrow("limit: must be between 1 and 100");
  });
});
