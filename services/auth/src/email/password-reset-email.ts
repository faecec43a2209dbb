import type { Logger } from "@renderbus/telemetry";
import type { Mailer } from "./mailer.js";

/** How long a password reset link works (Better Auth's `resetPasswordTokenExpiresIn`). */
export const PASSWORD_RESET_LINK_SECONDS = 60 * 60;

/** The email with a reset link; `url` is Better Auth's `/auth/reset-password/<token>?callbackURL=...`. */
export function passwordResetEmail(to: string, url: string) {
  return {
    to,
    subject: "Reset your Renderbus password",
    text: [
      "Someone asked to reset the password of the Renderbus account of this address. To choose a new one, open:",
      "",
      url,
      "",
      `The link works for ${PASSWORD_RESET_LINK_SECONDS / 60} minutes, once. Choosing a new password signs the account out everywhere.`,
      "If you did not ask for it, ignore this email: the password stays as it is.",
    ].join("\n"),
  };
}

/**
 * Better Auth's `sendResetPassword`. The email leaves in the background: `/auth/request-password-reset` answers the
 * same, as fast, whether the address has an account or not (awaiting the mail server only for real accounts would
 * tell them apart by time). A failure is logged with the user id, never the link.
 */
export function sendPasswordResetWith(mailer: Mailer, logger?: Logger) {
  return async ({ user, url }: { user: { id: string; email: string }; url: string }): Promise<void> => {
    mailer.send(passwordResetEmail(user.email, url)).catch((error: unknown) => {
      logger?.warn({ userId: user.id, err: { message: (error as Error).message } }, "password reset email not sent");
    });
  };
}
