import { useCallback, useEffect, useState } from "react";
import { api, request } from "../api";
import { confirmationLinkProblem } from "../email-confirmation";
import { useRouter } from "../router";
import { EMAIL_CONFIRMATION_CALLBACK_URL, useSession } from "../session";
import type { Balance } from "../types";
import { ErrorMessage, useAction } from "./ui";

/**
 * Above every signed-in page while the org's free credits are held (`GET /billing/balance` says
 * `awaitingEmailVerification`): the address to confirm and a button that sends the link again, or what was wrong
 * with a link that landed here (`?error=` on the redirect). A member of someone else's held org is told whose
 * address it waits for instead.
 */
export function EmailConfirmationBanner() {
  const session = useSession();
  const { path, search } = useRouter();
  const orgId = session.me?.orgId;
  const [held, setHeld] = useState<{ orgId: string; awaiting: boolean }>();
  // An answer for an org switched away from meanwhile is not this org's.
  const awaiting = held !== undefined && held.orgId === orgId && held.awaiting;

  const read = useCallback(async () => {
    if (!orgId) return;
    try {
      const balance = await api.get<Balance>("/billing/balance");
      setHeld({ orgId: balance.orgId, awaiting: balance.awaitingEmailVerification });
    } catch {
      // The Billing page shows this failure; the banner stays as it was.
    }
  }, [orgId]);

  // Read once per org; while credits are held, again on every page and whenever the tab is shown again (the link
  // is usually opened in another tab), so the banner goes as soon as the address is confirmed.
  const readAgainOn = awaiting ? path : "";
  useEffect(() => {
    void read();
  }, [read, readAgainOn]);
  useEffect(() => {
    if (!awaiting) return;
    const onShown = () => {
      if (document.visibilityState === "visible") void read();
    };
    document.addEventListener("visibilitychange", onShown);
    return () => document.removeEventListener("visibilitychange", onShown);
  }, [awaiting, read]);

  const { busy, error, run } = useAction();
  const [sentTo, setSentTo] = useState<string>();
  const email = session.user?.email;
  const send = (address: string) =>
    run(async () => {
      setSentTo(undefined);
      try {
        await request("POST", "/auth/send-verification-email", { email: address, callbackURL: EMAIL_CONFIRMATION_CALLBACK_URL });
      } catch (caught) {
        // Confirmed meanwhile ("Email is already verified")? Then the banner goes.
        void read();
        throw caught;
      }
      setSentTo(address);
    });

  if (!awaiting) return null;
  if (session.user?.emailVerified) {
    return (
      <section className="alert alert-info email-confirmation" aria-labelledby="email-confirmation-heading">
        <h2 id="email-confirmation-heading">Free credits on hold</h2>
        <p>This organization&apos;s free credits arrive once the person who created it confirms their email address.</p>
      </section>
    );
  }
  const linkProblem = sentTo ? undefined : confirmationLinkProblem(search);
  return (
    <section className="alert alert-warning email-confirmation" aria-labelledby="email-confirmation-heading">
      <h2 id="email-confirmation-heading">Confirm your email address</h2>
      {linkProblem ? (
        <p>
          <strong>{linkProblem === "expired" ? "That confirmation link has expired." : "That confirmation link is not valid."}</strong> Send yourself a new
          one below.
        </p>
      ) : null}
      <p>
        We sent a confirmation link to {email ? <strong className="break">{email}</strong> : "your email address"}. Your organization&apos;s free credits
        arrive once you follow it.
      </p>
      {email ? (
        <div className="email-confirmation-actions">
          <button type="button" className="button button-small" onClick={() => void send(email)} disabled={busy}>
            {busy ? "Sending…" : "Send the link again"}
          </button>
          <p role="status">{sentTo ? `Sent: a new link is on its way to ${sentTo}.` : ""}</p>
        </div>
      ) : null}
      <ErrorMessage error={error} title="The link could not be sent" />
    </section>
  );
}
