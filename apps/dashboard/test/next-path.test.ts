import { describe, expect, it } from "vitest";
import { nextQuery, safeNextPath } from "../src/next-path.js";

describe("the page to return to after signing in", () => {
  it("returns to an app page, keeping its query", () => {
    expect(safeNextPath("/invitations/inv_1")).toBe("/invitations/inv_1");
    expect(safeNextPath("/batches?status=failed")).toBe("/batches?status=failed");
  });

  it("ignores anything that could leave the app or the site", () => {
    for (const hostile of ["https://evil.example/x", "//evil.example/x", "/\\evil.example", "\\\\evil.example", "/../admin", "/%2e%2e/admin", "javascript:alert(1)", "jobs", "/x\nSet-Cookie:a"]) {
      expect(safeNextPath(hostile), hostile).toBeUndefined();
    }
  });

  it("does not bounce between the sign-in, sign-up and password reset pages", () => {
    expect(safeNextPath("/sign-in")).toBeUndefined();
    expect(safeNextPath("/sign-up?next=/jobs")).toBeUndefined();
    expect(safeNextPath("/forgot-password")).toBeUndefined();
    expect(safeNextPath("/reset-password?token=abc")).toBeUndefined();
    expect(safeNextPath(null)).toBeUndefined();
  });

  it("adds next to the sign-in link only when it leads somewhere other than the jobs list", () => {
    expect(nextQuery("/invitations/inv_1", "")).toBe("?next=%2Finvitations%2Finv_1");
    expect(nextQuery("/jobs", "")).toBe("");
    expect(nextQuery("/", "")).toBe("");
  });
});
