import { refusalOf } from "./refusal.js";

/**
 * The rules of the forgotten-password pages (pages/PasswordResetPages.tsx). Pure, so they are unit-tested
 * (test/password-reset.test.ts).
 */

/** The auth service's bounds on a password (services/auth/src/sessions/better-auth.ts, `emailAndPassword`). */
export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 128;

/** The query flag the reset page adds to the sign-in page it sends people on to, so that page says what happened. */
export const PASSWORD_CHANGED_QUERY = "?password=changed";

/** Whether the sign-in page was reached from a successful reset (it then says the password changed). */
export function passwordChanged(search: string): boolean {
  return new URLSearchParams(search).get("password") === "changed";
}

/**
 * What a reset link's redirect brought: Better Auth sends a followed link to the reset page with `?token=`, or with
 * `?error=INVALID_TOKEN` when the token is unknown, used or past its hour. A page opened with neither (a mangled
 * link, a bookmark) has nothing to reset with either.
 */
export function resetLinkOf(search: string): { token: string } | { problem: "invalid" } {
  const query = new URLSearchParams(search);
  const token = query.get("token");
  if (query.has("error") || !token) return { problem: "invalid" };
  return { token };
}

/** A problem with the reset form, on the field it is about. */
export interface NewPasswordProblem {
  field: "newPassword" | "confirmation";
  message: string;
}

/** What is wrong with a new password and its confirmation, as a person should read it; undefined when nothing is. */
export function newPasswordProblem(password: string, confirmation: string): NewPasswordProblem | undefined {
  if (password.length < PASSWORD_MIN_LENGTH) return { field: "newPassword", message: `Use at least ${PASSWORD_MIN_LENGTH} characters.` };
  if (password.length > PASSWORD_MAX_LENGTH) return { field: "newPassword", message: `Use at most ${PASSWORD_MAX_LENGTH} characters.` };
  if (password !== confirmation) return { field: "confirmation", message: "The two passwords do not match." };
  return undefined;
}

/**
 * Whether `/auth/request-password-reset` refused because this deployment has no mail server (no `SMTP_URL`): Better
 * Auth answers 400 `RESET_PASSWORD_DISABLED` "Reset password isn't enabled", which the gateway restates as
 * `VALIDATION_ERROR` with the same message (services/gateway/src/auth/auth-error-envelope.ts), so the message is
 * what tells it apart.
 */
export function resetUnavailable(error: unknown): boolean {
  const refusal = refusalOf(error);
  if (refusal?.status !== 400) return false;
  return refusal.code === "RESET_PASSWORD_DISABLED" || /reset password isn't enabled/i.test(refusal.message);
}

/**
 * Whether `/auth/reset-password` refused the link's token (used, past its hour, or never issued: 400 "Invalid
 * token"). Its other 400s are about the password's length, which the form checks first, so those are said as they
 * are.
 */
export function resetLinkRefused(error: unknown): boolean {
  const refusal = refusalOf(error);
  return refusal?.status === 400 && !/password too (short|long)/i.test(refusal.message);
}
