import { useState } from "react";
import { ApiError } from "../api";
import { formatTime } from "../format";
import { Link, useRouter } from "../router";
import { useSession } from "../session";
import { organizations, type InvitationForRecipient } from "../organizations";
import { ErrorMessage, Loading, Notice, PageHeader, useAction, useResource } from "../components/ui";
import { SendConfirmationLink } from "../components/SendConfirmationLink";
import { needsConfirmedAddress } from "../email-confirmation";
import { BASE } from "../router";

/**
 * Where an invitation link leads (`/app/invitations/:id`). Signed-out visitors are sent to sign in first and come
 * back here (App.tsx keeps the path in `?next=`). Accepting makes the org the session's active one.
 */
export function InvitationPage({ invitationId }: { invitationId: string }) {
  const invitation = useResource(() => organizations.getInvitation(invitationId), [invitationId]);
  const [declined, setDeclined] = useState(false);

  return (
    <>
      <PageHeader title="Invitation" />
      {invitation.loading && !invitation.data ? <Loading label="Loading the invitation" /> : null}
      {invitation.error ? <InvitationProblem error={invitation.error} invitationId={invitationId} /> : null}
      {declined ? (
        <Notice tone="success">
          You declined the invitation. <Link to="/jobs">Go to your jobs</Link>.
        </Notice>
      ) : invitation.data ? (
        <InvitationCard invitation={invitation.data} onDeclined={() => setDeclined(true)} />
      ) : null}
    </>
  );
}

function InvitationCard({ invitation, onDeclined }: { invitation: InvitationForRecipient; onDeclined: () => void }) {
  const { navigate } = useRouter();
  const accept = useAction();
  const decline = useAction();
  const busy = accept.busy || decline.busy;

  const onAccept = () =>
    accept.run(async () => {
      await organizations.acceptInvitation(invitation.id);
      // Better Auth makes the joined org the session's active one; the layout re-reads GET /me on navigation.
      navigate("/jobs");
    });
  const onDecline = () =>
    decline.run(async () => {
      await organizations.rejectInvitation(invitation.id);
      onDeclined();
    });

  return (
    <section className="card" aria-labelledby="invitation-heading">
      <h2 id="invitation-heading">Join {invitation.organizationName}</h2>
      <dl className="facts">
        <div className="fact-row">
          <dt>Organization</dt>
          <dd>{invitation.organizationName}</dd>
        </div>
        <div className="fact-row">
          <dt>Your role</dt>
          <dd>{invitation.role}</dd>
        </div>
        <div className="fact-row">
          <dt>Invited by</dt>
          <dd>{invitation.inviterEmail}</dd>
        </div>
        <div className="fact-row">
          <dt>For</dt>
          <dd>{invitation.email}</dd>
        </div>
        <div className="fact-row">
          <dt>Expires</dt>
          <dd>{formatTime(Date.parse(invitation.expiresAt))}</dd>
        </div>
      </dl>
      <p className="muted">Accepting switches you to {invitation.organizationName}; your own organization stays, and you can switch back at the top of the page.</p>
      <ErrorMessage error={accept.error} title="The invitation was not accepted" />
      <ErrorMessage error={decline.error} title="The invitation was not declined" />
      <div className="form-actions">
        <button type="button" className="button button-primary" disabled={busy} onClick={() => void onAccept()}>
          {accept.busy ? "Joining…" : "Accept invitation"}
        </button>
        <button type="button" className="button" disabled={busy} onClick={() => void onDecline()}>
          {decline.busy ? "Declining…" : "Decline"}
        </button>
      </div>
    </section>
  );
}

/** Better Auth's refusals an invitee can meet, in words that say what to do next. */
function InvitationProblem({ error, invitationId }: { error: unknown; invitationId: string }) {
  const session = useSession();
  const email = session.user?.email;
  if (needsConfirmedAddress(error)) {
    // Where addresses are confirmed, only a confirmed one may see or answer an invitation; the link sent now lands
    // back here.
    return (
      <section className="alert alert-warning email-confirmation" aria-labelledby="invitation-confirm-heading">
        <h2 id="invitation-confirm-heading">Confirm your email address to open this invitation</h2>
        <p>
          Invitations are answered from a confirmed address. Follow the link we sent to {email ? <strong className="break">{email}</strong> : "your address"}, or
          send a new one: it brings you back to this invitation.
        </p>
        {email ? <SendConfirmationLink email={email} callbackURL={`${BASE}/invitations/${encodeURIComponent(invitationId)}`} /> : null}
      </section>
    );
  }
  if (error instanceof ApiError && error.status === 403) {
    return (
      <div className="alert alert-error" role="alert">
        <strong>This invitation was sent to a different email address.</strong> You are signed in as {session.user?.email ?? "someone else"}. Sign out, then
        sign in or create an account with the invited address and open the link again.
      </div>
    );
  }
  if (error instanceof ApiError && error.status === 400) {
    return (
      <div className="alert alert-error" role="alert">
        <strong>This invitation is no longer valid.</strong> It was already answered, cancelled, or it expired. Ask whoever invited you for a new link.
        <p>
          <Link to="/jobs">Go to your jobs</Link>
        </p>
      </div>
    );
  }
  return <ErrorMessage error={error} title="Could not load the invitation" />;
}
