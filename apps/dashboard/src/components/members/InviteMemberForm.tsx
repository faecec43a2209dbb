import { useState, type FormEvent } from "react";
import { formatTime } from "../../format";
import { invitationUrl } from "../../members";
import { organizations, type Invitation, type Role } from "../../organizations";
import { CopyButton, ErrorMessage, useAction } from "../ui";

/**
 * Invites someone by email. The result is a link for the inviter to share (a deployment with a mail server also
 * emails it, from a confirmed inviter); the invitee opens it signed in with that address.
 */
export function InviteMemberForm({ organizationId, onInvited }: { organizationId: string; onInvited: () => Promise<unknown> }) {
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<Role>("member");
  const [invited, setInvited] = useState<Invitation>();
  const { busy, error, run } = useAction();

  const submit = (event: FormEvent) => {
    event.preventDefault();
    void run(async () => {
      setInvited(undefined);
      const invitation = await organizations.invite(organizationId, email.trim(), role);
      setEmail("");
      await onInvited();
      setInvited(invitation);
    });
  };

  return (
    <section className="card" aria-labelledby="invite-heading">
      <h2 id="invite-heading">Invite someone</h2>
      <form className="inline-form" onSubmit={submit}>
        <div className="field">
          <label htmlFor="invite-email">Email</label>
          <input id="invite-email" type="email" autoComplete="off" required maxLength={254} value={email} onChange={(event) => setEmail(event.target.value)} />
        </div>
        <div className="field field-role">
          <label htmlFor="invite-role">Role</label>
          <select id="invite-role" value={role} onChange={(event) => setRole(event.target.value as Role)} aria-describedby="invite-role-hint">
            <option value="member">member</option>
            <option value="admin">admin</option>
          </select>
          <p className="hint" id="invite-role-hint">
            Admins also manage members, API keys and webhooks.
          </p>
        </div>
        <button type="submit" className="button button-primary" disabled={busy || email.trim() === ""}>
          {busy ? "Inviting…" : "Invite"}
        </button>
      </form>
      <ErrorMessage error={error} title="The invitation was not created" />
      {invited ? <InvitationLink invitation={invited} /> : null}
    </section>
  );
}

function InvitationLink({ invitation }: { invitation: Invitation }) {
  const url = invitationUrl(window.location.origin, invitation.id);
  return (
    <div className="alert alert-success" role="status">
      <p>
        <strong>{invitation.email} is invited as {invitation.role}.</strong> Send them this link; they open it signed in (or after signing up) with
        that email address. It works until {formatTime(Date.parse(invitation.expiresAt))}.
      </p>
      <div className="key-row">
        <label htmlFor="invitation-link" className="visually-hidden">
          Invitation link
        </label>
        <input id="invitation-link" className="mono key-value" readOnly value={url} onFocus={(event) => event.currentTarget.select()} />
        <CopyButton text={url} label="Copy link" />
      </div>
    </div>
  );
}
