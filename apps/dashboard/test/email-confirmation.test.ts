import { describe, expect, it } from "vitest";
import { confirmationLinkProblem } from "../src/email-confirmation.js";

describe("what a confirmation link's redirect says went wrong", () => {
  it("tells an expired link from one that was never valid", () => {
    expect(confirmationLinkProblem("?error=TOKEN_EXPIRED")).toBe("expired");
    expect(confirmationLinkProblem("?error=INVALID_TOKEN")).toBe("invalid");
    expect(confirmationLinkProblem("?error=USER_NOT_FOUND")).toBe("invalid");
  });

  it("says nothing for a page opened without one, or with another error", () => {
    expect(confirmationLinkProblem("")).toBeUndefined();
    expect(confirmationLinkProblem("?status=failed")).toBeUndefined();
    expect(confirmationLinkProblem("?error=SOMETHING_ELSE")).toBeUndefined();
  });
});
