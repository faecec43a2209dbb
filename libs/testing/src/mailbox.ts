import { SMTPServer } from "smtp-server";

/** One email as the mail server received it: its envelope recipients and the raw message (headers and body). */
export interface ReceivedEmail {
  to: string[];
  raw: string;
  /** The raw message quoted-printable decoded: its body's lines as written, for reading its text. */
  decoded: string;
}

/** A real SMTP server on loopback, for tests of what Renderbus emails (the mail server is outside Renderbus). */
export interface Mailbox {
  /** The `SMTP_URL` to give the auth service (`smtp://127.0.0.1:<port>`, no TLS, no login). */
  url: string;
  /** Every email received, oldest first. */
  received: ReceivedEmail[];
  /** While `true`, every recipient is refused (550), as a mail server that will not take the message. */
  refuse(value: boolean): void;
  /** The emails sent to `to`, oldest first. */
  emailsTo(to: string): ReceivedEmail[];
  /**
   * The first link containing `path` in the newest email sent to `to` that has one, quoted-printable decoded: by
   * default the address confirmation link (`.../auth/verify-email?token=...`); `"/auth/reset-password/"` for a
   * password reset, `"/app/invitations/"` for an invitation.
   * @throws Error when no email was sent to `to`, or none holds such a link.
   */
  linkFor(to: string, path?: string): string;
  close(): Promise<void>;
}

/** Undoes quoted-printable: soft line breaks (`=` at a line's end) and `=XX` escapes (a link's `=` is `=3D`). */
function decodeQuotedPrintable(text: string): string {
  return text.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/** Starts a mailbox on a free loopback port that keeps what it is sent (or refuses it, see `refuse`). */
export async function startMailbox(): Promise<Mailbox> {
  const received: ReceivedEmail[] = [];
  let refusing = false;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onRcptTo(_address, _session, callback) {
      callback(refusing ? Object.assign(new Error("mailbox unavailable"), { responseCode: 550 }) : undefined);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        received.push({ to: session.envelope.rcptTo.map((rcpt) => rcpt.address), raw, decoded: decodeQuotedPrintable(raw) });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as { port: number }).port;
  const emailsTo = (to: string) => received.filter((message) => message.to.includes(to));
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    refuse(value) {
      refusing = value;
    },
    emailsTo,
    linkFor(to, path = "/auth/verify-email?token=") {
      const emails = emailsTo(to);
      if (emails.length === 0) throw new Error(`no email to ${to}`);
      for (const mail of emails.toReversed()) {
        const link = mail.decoded
          .match(/https?:\/\/[^\s"'<>]+/g)
          ?.find((url) => url.includes(path));
        if (link) return link;
      }
      throw new Error(`no link containing ${path} in the ${emails.length} emails to ${to}`);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
