import { describe, expect, it } from "vitest";
import { newPasswordProblem, passwordChanged, resetLinkOf, resetLinkRefused, resetUnavailable } from "../src/password-reset.js";

/** What api.ts throws for a refused request (an ApiError), without the browser code that module needs. */
const refused = (code: string, message: string, status: number) => Object.assign(new Error(message), { name: "ApiError", code, status });

describe("the forgotten-password pages", () => {
  it("reads the token of a followed reset link, and calls anything else not valid", () => {
    expect(resetLinkOf("?token=abc123")).toEqual({ token: "abc123" });
    expect(resetLinkOf("?error=INVALID_TOKEN")).toEqual({ problem: "invalid" });
    expect(resetLinkOf("?token=abc123&error=INVALID_TOKEN")).toEqual({ problem: "invalid" });
    expect(resetLinkOf("")).toEqual({ problem: "invalid" });
    expect(resetLinkOf("?token=")).toEqual({ problem: "invalid" });
  });

  it("asks for 8 to 128 characters, typed the same twice", () => {
    expect(newPasswordProblem("short", "short")).toEqual({ field: "newPassword", message: "Use at least 8 characters." });
    expect(newPasswordProblem("x".repeat(129), "x".repeat(129))).toEqual({ field: "newPassword", message: "Use at most 128 characters." });
    expect(newPasswordProblem("a brand new passphrase", "a brand new passphrasE")).toEqual({ field: "confirmation", message: "The two passwords do not match." });
    expect(newPasswordProblem("a brand new passphrase", "a brand new passphrase")).toBeUndefined();
    expect(newPasswordProblem("x".repeat(128), "x".repeat(128))).toBeUndefined();
  });

  it("tells a deployment without a mail server from other refusals, through the gateway's envelope or not", () => {
    expect(resetUnavailable(refused("VALIDATION_ERROR", "Reset password isn't enabled", 400))).toBe(true);
    expect(resetUnavailable(refused("RESET_PASSWORD_DISABLED", "Reset password isn't enabled", 400))).toBe(true);
    expect(resetUnavailable(refused("VALIDATION_ERROR", "Invalid email address", 400))).toBe(false);
    expect(resetUnavailable(refused("RATE_LIMITED", "Too many requests right now. Wait a moment and try again.", 429))).toBe(false);
    expect(resetUnavailable(new Error("Reset password isn't enabled"))).toBe(false);
  });

  it("takes a refused reset for a link no longer valid, unless it is about the password's length", () => {
    expect(resetLinkRefused(refused("VALIDATION_ERROR", "Invalid token", 400))).toBe(true);
    expect(resetLinkRefused(refused("VALIDATION_ERROR", "Password too short", 400))).toBe(false);
    expect(resetLinkRefused(refused("RATE_LIMITED", "Too many requests right now. Wait a moment and try again.", 429))).toBe(false);
    expect(resetLinkRefused(refused("NETWORK_ERROR", "Could not reach Renderbus.", 0))).toBe(false);
  });

  it("has the sign-in page say the password changed only when sent there by a reset", () => {
    expect(passwordChanged("?password=changed")).toBe(true);
    expect(passwordChanged("")).toBe(false);
    expect(passwordChanged("?next=%2Fjobs")).toBe(false);
  });
});
