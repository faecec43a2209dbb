import { APIError } from "better-auth/api";
import type { Logger } from "@renderbus/telemetry";
import type { Mailer } from "./mailer.js";

/** How long a confirmation link works (Better Auth's `expiresIn`); a new one can be asked for from the dashboard. */
export const VERIFICATION_LINK_SECONDS = 24 * 60 * 60;

/** The email that confirms an address; `url` is Better Auth's `/auth/verify-email?token=...`. */
export function verificationEmail(to: string, url: string) {
  return {
    to,
    subject: "Confirm your email address for Renderbus",
    text: [
      "Confirm your email address to finish signing up for Renderbus:",
      "",
      url,
      "",
      `The link works for ${VERIFICATION_LINK_SECONDS / 3600} hours. Your organization's free monthly credits arrive once the address is confirmed.`,
      "If you did not sign up, ignore this email.",
    ].join("\n"),
  };
}

/**
 * Better Auth's `sendVerificationEmail`. A link asked for again (`/auth/send-verification-email`) fails loudly when
 * the mail server refuses it, so the dashboard can say so; the one sent on sign-up does not fail the sign-up (the
 * account exists by then): it is logged, and the user asks for another.
 */
export function sendVerificationEmailWith(mailer: Mailer, logger?: Logger) {
  return async ({ user, url }: { user: { id: string; email: string }; url: string }, request?: Request): Promise<void> => {
    // Read without parsing: a request URL that does not parse must not fail a sign-up here.
    const askedAgain = request?.url.split("?")[0]?.endsWith("/send-verification-email") ?? false;
    try {
      await mailer.send(verificationEmail(user.email, url));
    } catch (error) {
      logger?.warn({ userId: user.id, err: { message: (error as Error).message } }, "verification email not sent");
      if (askedAgain) throw new APIError("SERVICE_UNAVAILABLE", { message: "The confirmation email could not be sent; retry later" });
    }
  };
}
