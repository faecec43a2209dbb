import { useCallback, useEffect, useState } from "react";
import { api } from "../api";
import { confirmationLinkProblem } from "../email-confirmation";
import { useRouter } from "../router";
import { EMAIL_CONFIRMATION_CALLBACK_URL, useSession } from "../session";
import type { Balance } from "../types";
import { SendConfirmationLink } from "./SendConfirmationLink";

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

  const [sent, setSent] = useState(false);
  const email = session.user?.email;

  if (!awaiting) return null;
  if (session.user?.emailVerified) {
    return (
      <section className="alert alert-info email-confirmation" aria-labelledby="email-confirmation-heading">
        <h2 id="email-confirmation-heading">Free credits on hold</h2>
        <p>This organization&apos;s free credits arrive once the person who created it confirms their email address.</p>
      </section>
    );
  }
  const linkProblem = sent ? undefined : confirmationLinkProblem(search);
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
        // A failure may mean it was confirmed meanwhile ("Email is already verified"): look again, and the banner goes.
        <SendConfirmationLink email={email} callbackURL={EMAIL_CONFIRMATION_CALLBACK_URL} onSent={() => setSent(true)} onFailed={() => void read()} />
      ) : null}
    </section>
  );
}
