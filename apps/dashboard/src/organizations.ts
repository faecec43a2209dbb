import { request, withQuery } from "./api";
import type { FullOrganization, Invitation, InvitationForRecipient, Member, Organization, Role } from "./organization-types";

export type { FullOrganization, Invitation, InvitationForRecipient, Member, Organization, Role } from "./organization-types";

/**
 * Better Auth's organization plugin, reached through the gateway's `/auth/*` proxy with the session cookie. Its
 * answers are bare JSON (no `{data}` envelope) and its errors `{code, message}`, which `request` already reads.
 * Dates arrive as ISO strings.
 */

const path = (endpoint: string) => `/auth/organization/${endpoint}`;

export const organizations = {
  list: () => request<Organization[]>("GET", path("list")),
  setActive: (organizationId: string) => request<Organization>("POST", path("set-active"), { organizationId }),
  // The org is named explicitly so the page always shows the org that `GET /me` (and so the REST API) acts on.
  getFull: (organizationId: string) => request<FullOrganization>("GET", withQuery(path("get-full-organization"), { organizationId })),
  invite: (organizationId: string, email: string, role: Role) => request<Invitation>("POST", path("invite-member"), { organizationId, email, role }),
  cancelInvitation: (invitationId: string) => request<Invitation>("POST", path("cancel-invitation"), { invitationId }),
  getInvitation: (invitationId: string) => request<InvitationForRecipient>("GET", withQuery(path("get-invitation"), { id: invitationId })),
  acceptInvitation: (invitationId: string) => request<{ invitation: Invitation; member: Member }>("POST", path("accept-invitation"), { invitationId }),
  rejectInvitation: (invitationId: string) => request<{ invitation: Invitation }>("POST", path("reject-invitation"), { invitationId }),
  updateMemberRole: (organizationId: string, memberId: string, role: Role) => request<Member>("POST", path("update-member-role"), { organizationId, memberId, role }),
  removeMember: (organizationId: string, memberId: string) => request<{ member: Member }>("POST", path("remove-member"), { organizationId, memberIdOrEmail: memberId }),
  leave: (organizationId: string) => request<Member>("POST", path("leave"), { organizationId }),
};
