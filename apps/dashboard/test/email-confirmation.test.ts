import { describe, expect, it } from "vitest";
import { confirmationLinkProblem, needsConfirmedAddress } from "../src/email-confirmation.js";

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

describe("an invitation refused until the address is confirmed", () => {
  // As api.ts's ApiError carries them: the envelope's code, the message, the status.
  const refusal = (status: number, message: string) => Object.assign(new Error(message), { status, code: status === 403 ? "FORBIDDEN" : "VALIDATION_ERROR" });

  it("is told apart from an invitation sent to another address by Better Auth's message", () => {
    expect(needsConfirmedAddress(refusal(403, "Email verification required to view or list invitations for the session email"))).toBe(true);
    expect(needsConfirmedAddress(refusal(403, "Email verification required before accepting or rejecting invitation"))).toBe(true);
    expect(needsConfirmedAddress(refusal(403, "You are not the recipient of the invitation"))).toBe(false);
    expect(needsConfirmedAddress(refusal(400, "Email verification required"))).toBe(false);
    expect(needsConfirmedAddress("Email verification required")).toBe(false);
  });
});
