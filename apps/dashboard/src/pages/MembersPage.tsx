import { api } from "../api";
import { useSession } from "../session";
import { ErrorMessage, Loading, Notice, PageHeader, TableWrap, useResource } from "../components/ui";
import type { Org } from "../types";

const ROLE_HELP: Record<string, string> = {
  owner: "Full control, including webhooks and keys",
  admin: "Manages webhooks and keys",
  member: "Submits and views jobs",
};

/** Members and roles. The API exposes only the caller's own membership (GET /me), so the list is read-only. */
export function MembersPage() {
  const session = useSession();
  const org = useResource(() => api.get<Org>("/orgs/current"), []);
  const role = session.me?.role ?? "member";
  return (
    <>
      <PageHeader title="Members">
        <p className="muted">{org.data ? `People in ${org.data.name}.` : "People in your organization."}</p>
      </PageHeader>
      <ErrorMessage error={org.error} title="Could not load your organization" />
      {org.loading && !org.data ? <Loading label="Loading members" /> : null}
      <TableWrap label="Members">
        <table className="table table-stack">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">Can</th>
            </tr>
          </thead>
          <tbody>
            <tr>
              <td data-label="Name">{session.user?.name ?? "You"} (you)</td>
              <td data-label="Email">{session.user?.email ?? "-"}</td>
              <td data-label="Role">{role}</td>
              <td data-label="Can">{ROLE_HELP[role] ?? "-"}</td>
            </tr>
          </tbody>
        </table>
      </TableWrap>
      <Notice>Inviting people and changing roles is not available in the dashboard yet; your operator can add members.</Notice>
    </>
  );
}
