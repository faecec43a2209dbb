import { useState } from "react";
import { ApiError, request } from "../api";
import { ErrorMessage, useAction } from "./ui";

/** What the button says when the mail server refused the email. */
export const MAIL_REFUSED = "The email could not be sent just now. Try again in a few minutes.";

/**
 * "Send the link again": another confirmation link to the signed-in user's `email`, landing on `callbackURL` once
 * followed; says it was sent, or why not (429 when asked too often, 503 when the mail server refuses). `onFailed`
 * lets the caller look again (confirmed meanwhile: "Email is already verified").
 */
export function SendConfirmationLink({ email, callbackURL, onSent, onFailed }: { email: string; callbackURL: string; onSent?: () => void; onFailed?: () => void }) {
  const { busy, error, run } = useAction();
  const [sentTo, setSentTo] = useState<string>();
  const send = () =>
    run(async () => {
      setSentTo(undefined);
      try {
        await request("POST", "/auth/send-verification-email", { email, callbackURL });
      } catch (caught) {
        onFailed?.();
        // The auth service answers 503 only when the mail server would not take the email: say that, not "Renderbus
        // is unavailable" (the rest of the dashboard works).
        if (caught instanceof ApiError && caught.status === 503) throw new Error(MAIL_REFUSED);
        throw caught;
      }
      setSentTo(email);
      onSent?.();
    });
  return (
    <>
      <div className="email-confirmation-actions">
        <button type="button" className="button button-small" onClick={() => void send()} disabled={busy}>
          {busy ? "Sending…" : "Send the link again"}
        </button>
        <p role="status">{sentTo ? `Sent: a new link is on its way to ${sentTo}.` : ""}</p>
      </div>
      <ErrorMessage error={error} title="The link could not be sent" />
    </>
  );
}
