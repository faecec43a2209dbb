import { useId } from "react";
import { useRouter } from "../router";
import { useSession } from "../session";
import { organizations } from "../organizations";
import { ErrorMessage, useAction, useResource } from "./ui";

/** A job or batch page belongs to one org; after switching, its list is the place that still makes sense. */
const ORG_SPECIFIC_PAGE = /^\/(jobs|batches)\/(?!new$)[^/]+$/;

/**
 * Picks the session's active org, which is the org every API call from the dashboard acts on. Shown only to people
 * in more than one org (most have just their personal one).
 */
export function OrgSwitcher() {
  const session = useSession();
  const { path, navigate } = useRouter();
  const activeOrgId = session.me?.orgId;
  // Joining or leaving an org changes the active one, so the list is re-read whenever that changes.
  const orgs = useResource(() => organizations.list(), [activeOrgId]);
  const { busy, error, run } = useAction();
  const id = useId();
  if (!orgs.data || orgs.data.length < 2 || !activeOrgId) return null;

  const switchTo = (organizationId: string) =>
    run(async () => {
      await organizations.setActive(organizationId);
      await session.refresh();
      if (ORG_SPECIFIC_PAGE.test(path)) navigate(path.startsWith("/batches") ? "/batches" : "/jobs");
    });

  return (
    <div className="org-switcher">
      <label htmlFor={id} className="visually-hidden">
        Organization
      </label>
      <select id={id} value={activeOrgId} disabled={busy} onChange={(event) => void switchTo(event.target.value)}>
        {orgs.data.map((org) => (
          <option key={org.id} value={org.id}>
            {org.name}
          </option>
        ))}
      </select>
      <ErrorMessage error={error} title="Could not switch organization" />
    </div>
  );
}
