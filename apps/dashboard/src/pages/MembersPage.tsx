import { useRouter } from "../router";
import { useSession } from "../session";
import { canManage, pendingInvitations } from "../members";
import { organizations } from "../organizations";
import { ErrorMessage, Loading, Notice, PageHeader, useResource } from "../components/ui";
import { InviteMemberForm } from "../components/members/InviteMemberForm";
import { MembersTable } from "../components/members/MembersTable";
import { PendingInvitations } from "../components/members/PendingInvitations";

/**
 * The active org's members and invitations (Better Auth's organization plugin). Owners and admins invite people,
 * change roles and remove members; members see the list.
 */
export function MembersPage() {
  const session = useSession();
  const { navigate } = useRouter();
  const orgId = session.me?.orgId;
  const org = useResource(() => organizations.getFull(orgId ?? ""), [orgId]);
  const viewer = { userId: session.me?.userId ?? "", role: session.me?.role ?? null };
  const manager = canManage(viewer.role);
  // A role change may be the viewer's own, which changes what this page (and the API) lets them do.
  const reload = () => Promise.all([org.reload(), session.refresh().catch(() => undefined)]);
  const left = () => {
    session.refresh().catch(() => undefined);
    navigate("/jobs");
  };

  return (
    <>
      <PageHeader title="Members">
        <p className="muted">{org.data ? `People in ${org.data.name}.` : "People in your organization."}</p>
      </PageHeader>
      <ErrorMessage error={org.error} title="Could not load the members" />
      {org.loading && !org.data ? <Loading label="Loading members" /> : null}
      {org.data && manager ? <InviteMemberForm organizationId={org.data.id} onInvited={reload} /> : null}
      {org.data && manager ? <PendingInvitations invitations={pendingInvitations(org.data.invitations, Date.now())} onChanged={reload} /> : null}
      {org.data && !manager ? <Notice>Only owners and admins can invite people and change roles. Your role is {viewer.role ?? "member"}.</Notice> : null}
      {org.data ? <MembersTable org={org.data} viewer={viewer} onChanged={reload} onLeft={left} /> : null}
      <RoleGuide />
    </>
  );
}

function RoleGuide() {
  return (
    <section aria-labelledby="roles-heading">
      <h2 id="roles-heading">Roles</h2>
      <dl className="facts">
        <div className="fact-row">
          <dt>owner</dt>
          <dd>Everything an admin can do, and makes or removes other owners. An organization always keeps one.</dd>
        </div>
        <div className="fact-row">
          <dt>admin</dt>
          <dd>Invites and removes members, manages API keys and webhooks.</dd>
        </div>
        <div className="fact-row">
          <dt>member</dt>
          <dd>Submits and views jobs and batches.</dd>
        </div>
      </dl>
    </section>
  );
}
