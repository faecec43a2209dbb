import nodemailer from "nodemailer";
import { emailFromOf, type AuthConfig } from "../config.js";

/** Bounds on one SMTP exchange, so a mail server that stalls holds a request for 10 s at most. */
const SMTP_TIMEOUT_MS = 10_000;

/** One plain-text email. Bodies carry links that are credentials: they are never logged. */
export interface Email {
  to: string;
  subject: string;
  text: string;
}

/** Sends Renderbus's emails (docs/operations.md, "Email"). */
export interface Mailer {
  send(email: Email): Promise<void>;
}

/** A mailer over the SMTP server of `SMTP_URL` (nodemailer; STARTTLS when the server offers it, TLS with smtps://). */
export function smtpMailer(config: Pick<AuthConfig, "SMTP_URL" | "EMAIL_FROM" | "PUBLIC_URL">): Mailer {
  if (!config.SMTP_URL) throw new Error("SMTP_URL is not set");
  const transport = nodemailer.createTransport({
    url: config.SMTP_URL,
    connectionTimeout: SMTP_TIMEOUT_MS,
    greetingTimeout: SMTP_TIMEOUT_MS,
    socketTimeout: SMTP_TIMEOUT_MS,
  });
  const from = emailFromOf(config);
  return {
    async send({ to, subject, text }) {
      await transport.sendMail({ from, to, subject, text });
    },
  };
}
