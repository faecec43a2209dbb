import { useState } from "react";
import { formatTime } from "../../format";
import { actionsFor, canLeave, mainRole } from "../../members";
import { organizations, type FullOrganization, type Member, type Role } from "../../organizations";
import { ConfirmDialog, ErrorMessage, Notice, DataTable, useAction } from "../ui";

interface Viewer {
  userId: string;
  role: string | null;
}

/**
 * The org's members. Owners and admins change roles in place and remove people (after a confirmation); everyone
 * may leave, except the last owner. Everything else is read-only.
 */
export function MembersTable({ org, viewer, onChanged, onLeft }: { org: FullOrganization; viewer: Viewer; onChanged: () => Promise<unknown>; onLeft: () => void }) {
  const [toRemove, setToRemove] = useState<Member>();
  const [done, setDone] = useState<string>();
  const action = useAction();

  const changeRole = (member: Member, role: Role) =>
    action.run(async () => {
      setDone(undefined);
      await organizations.updateMemberRole(org.id, member.id, role);
      // The notice waits for the list, so what it says and what the table shows agree.
      await onChanged();
      setDone(`${member.user.name} is now ${role}.`);
    });

  const remove = (member: Member) =>
    action.run(async () => {
      setDone(undefined);
      const isSelf = member.userId === viewer.userId;
      try {
        if (isSelf) await organizations.leave(org.id);
        else await organizations.removeMember(org.id, member.id);
      } finally {
        setToRemove(undefined);
      }
      if (isSelf) return onLeft();
      await onChanged();
      setDone(`${member.user.name} was removed from ${org.name}.`);
    });

  const leaving = toRemove?.userId === viewer.userId;
  return (
    <section aria-labelledby="members-heading">
      <h2 id="members-heading">Members</h2>
      {done ? <Notice tone="success">{done}</Notice> : null}
      <ErrorMessage error={action.error} title="The change was not made" />
      <DataTable label="Member list" columns={["Name", "Email", "Role", "Joined", { label: "Actions", hidden: true }]}>
        {org.members.map((member) => (
          <MemberRow key={member.id} member={member} members={org.members} viewer={viewer} busy={action.busy} onRoleChange={changeRole} onRemove={setToRemove} />
        ))}
      </DataTable>
      <ConfirmDialog
        open={toRemove !== undefined}
        title={leaving ? `Leave ${org.name}?` : `Remove ${toRemove?.user.name ?? ""}?`}
        confirmLabel={leaving ? "Leave organization" : "Remove member"}
        busy={action.busy}
        onConfirm={() => toRemove && void remove(toRemove)}
        onCancel={() => setToRemove(undefined)}
      >
        <p>
          {leaving
            ? `You lose access to ${org.name}'s jobs, keys and settings at once, and the API keys you created stop working. To come back, an owner or admin has to invite you again.`
            : `${toRemove?.user.email ?? ""} loses access to ${org.name} at once, and their API keys stop working (the keys they created are revoked).`}
        </p>
      </ConfirmDialog>
    </section>
  );
}

function MemberRow({
  member,
  members,
  viewer,
  busy,
  onRoleChange,
  onRemove,
}: {
  member: Member;
  members: Member[];
  viewer: Viewer;
  busy: boolean;
  onRoleChange: (member: Member, role: Role) => void;
  onRemove: (member: Member) => void;
}) {
  const isSelf = member.userId === viewer.userId;
  const { roleOptions, canRemove } = actionsFor(viewer, member, members);
  const role = mainRole(member);
  const removable = isSelf ? canLeave(member, members) : canRemove;
  return (
    <tr data-member-id={member.id}>
      <td data-label="Name">
        {member.user.name}
        {isSelf ? " (you)" : null}
      </td>
      <td data-label="Email" className="break">
        {member.user.email}
      </td>
      <td data-label="Role">
        {roleOptions.length > 0 ? (
          <select aria-label={`Role of ${member.user.name}`} value={role} disabled={busy} onChange={(event) => onRoleChange(member, event.target.value as Role)} className="select-small">
            {roleOptions.map((option) => (
              <option key={option} value={option}>
                {option}
              </option>
            ))}
          </select>
        ) : (
          role
        )}
      </td>
      <td data-label="Joined">{formatTime(Date.parse(member.createdAt))}</td>
      <td data-label="Actions">
        {removable ? (
          <button type="button" className="button button-small button-danger" disabled={busy} onClick={() => onRemove(member)} aria-label={isSelf ? "Leave organization" : `Remove ${member.user.name}`}>
            {isSelf ? "Leave" : "Remove"}
          </button>
        ) : null}
      </td>
    </tr>
  );
}
