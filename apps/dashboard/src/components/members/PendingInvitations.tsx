import { useState } from "react";
import { formatTime } from "../../format";
import { invitationUrl } from "../../members";
import { organizations, type Invitation } from "../../organizations";
import { CopyButton, EmptyState, ErrorMessage, Notice, DataTable, useAction } from "../ui";

/** Invitations nobody has answered yet, each with its link to share again, and a way to call it off. */
export function PendingInvitations({ invitations, onChanged }: { invitations: Invitation[]; onChanged: () => Promise<unknown> }) {
  const [cancelled, setCancelled] = useState<string>();
  const { busy, error, run } = useAction();
  const cancel = (invitation: Invitation) =>
    run(async () => {
      setCancelled(undefined);
      await organizations.cancelInvitation(invitation.id);
      await onChanged();
      setCancelled(invitation.email);
    });

  return (
    <section aria-labelledby="invitations-heading">
      <h2 id="invitations-heading">Pending invitations</h2>
      {cancelled ? <Notice tone="success">The invitation for {cancelled} was cancelled; its link no longer works.</Notice> : null}
      <ErrorMessage error={error} title="The invitation was not cancelled" />
      {invitations.length === 0 ? (
        <EmptyState title="No pending invitations" />
      ) : (
        <DataTable label="Invitation list" columns={["Email", "Role", "Expires", { label: "Actions", hidden: true }]}>
          {invitations.map((invitation) => (
            <tr key={invitation.id} data-invitation-id={invitation.id}>
              <td data-label="Email" className="break">
                {invitation.email}
              </td>
              <td data-label="Role">{invitation.role}</td>
              <td data-label="Expires">{formatTime(Date.parse(invitation.expiresAt))}</td>
              <td data-label="Actions">
                <span className="row-actions">
                  <CopyButton text={invitationUrl(window.location.origin, invitation.id)} label="Copy link" hiddenSuffix={`for ${invitation.email}`} />
                  <button type="button" className="button button-small button-danger" disabled={busy} onClick={() => void cancel(invitation)} aria-label={`Cancel invitation for ${invitation.email}`}>
                    Cancel
                  </button>
                </span>
              </td>
            </tr>
          ))}
        </DataTable>
      )}
    </section>
  );
}
