import { refusalOf } from "./refusal.js";

/**
 * Better Auth refuses to show or answer an invitation to an unconfirmed address where addresses are confirmed (403,
 * "Email verification required ..."): a different 403 from "sent to a different address", told apart by its message.
 */
export function needsConfirmedAddress(error: unknown): boolean {
  const refusal = refusalOf(error);
  return refusal?.status === 403 && /email verification required/i.test(refusal.message);
}

/** What was wrong with a confirmation link, from the `?error=` Better Auth adds to its redirect when one is bad. */
export type ConfirmationLinkProblem = "expired" | "invalid";

/**
 * Better Auth's codes for a link that confirmed nothing: a token past its 24 hours, one it did not issue (or
 * mangled by a mail client), or one for a deleted account. Pure, so it is unit-tested
 * (test/email-confirmation.test.ts).
 */
export function confirmationLinkProblem(search: string): ConfirmationLinkProblem | undefined {
  const error = new URLSearchParams(search).get("error");
  if (error === "TOKEN_EXPIRED") return "expired";
  if (error === "INVALID_TOKEN" || error === "USER_NOT_FOUND") return "invalid";
  return undefined;
}
