import nodemailer from "nodemailer";
import { APIError } from "better-auth/api";
import type { Logger } from "@renderbus/telemetry";
import { emailFromOf, type AuthConfig } from "../config.js";

/** How long a confirmation link works (Better Auth's `expiresIn`); a new one can be asked for from the dashboard. */
export const VERIFICATION_LINK_SECONDS = 24 * 60 * 60;

/** Bounds on one SMTP exchange, so a mail server that stalls holds a sign-up or a resend for 10 s at most. */
const SMTP_TIMEOUT_MS = 10_000;

export interface VerificationEmail {
  to: string;
  /** The confirmation link (Better Auth's `/auth/verify-email?token=...`): a credential, never logged. */
  url: string;
}

export interface VerificationMailer {
  send(email: VerificationEmail): Promise<void>;
  close(): void;
}

/** Sends confirmation links through the SMTP server of `SMTP_URL`. */
export function smtpVerificationMailer(config: Pick<AuthConfig, "SMTP_URL" | "EMAIL_FROM" | "PUBLIC_URL">): VerificationMailer {
  if (!config.SMTP_URL) throw new Error("SMTP_URL is not set");
  const transport = nodemailer.createTransport({
    url: config.SMTP_URL,
    connectionTimeout: SMTP_TIMEOUT_MS,
    greetingTimeout: SMTP_TIMEOUT_MS,
    socketTimeout: SMTP_TIMEOUT_MS,
  });
  const from = emailFromOf(config as AuthConfig);
  return {
    async send({ to, url }) {
      await transport.sendMail({
        from,
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
      });
    },
    close() {
      transport.close();
    },
  };
}

/**
 * Better Auth's `sendVerificationEmail`. A link asked for again (`/auth/send-verification-email`) fails loudly when
 * the mail server refuses it, so the dashboard can say so; the one sent on sign-up does not fail the sign-up (the
 * account exists by then): it is logged, and the user asks for another.
 */
export function sendVerificationEmailWith(mailer: VerificationMailer, logger?: Logger) {
  return async ({ user, url }: { user: { id: string; email: string }; url: string }, request?: Request): Promise<void> => {
    const askedAgain = request !== undefined && new URL(request.url).pathname.endsWith("/send-verification-email");
    try {
      await mailer.send({ to: user.email, url });
    } catch (error) {
      logger?.warn({ userId: user.id, err: { message: (error as Error).message } }, "verification email not sent");
      if (askedAgain) throw new APIError("SERVICE_UNAVAILABLE", { message: "The confirmation email could not be sent; retry later" });
    }
  };
}
