/** The organization plugin's JSON shapes, as the dashboard reads them (dates are ISO strings). */

export type Role = "owner" | "admin" | "member";

export interface Organization {
  id: string;
  name: string;
  slug: string;
  createdAt: string;
}

export interface Member {
  id: string;
  organizationId: string;
  userId: string;
  /** One role, or several separated by commas (Better Auth allows both; Renderbus gives one). */
  role: string;
  createdAt: string;
  user: { id: string; name: string; email: string };
}

export interface Invitation {
  id: string;
  organizationId: string;
  email: string;
  role: string;
  status: "pending" | "accepted" | "rejected" | "canceled";
  expiresAt: string;
  inviterId: string;
}

/** An invitation as its recipient sees it. */
export interface InvitationForRecipient extends Invitation {
  organizationName: string;
  inviterEmail: string;
}

export interface FullOrganization extends Organization {
  members: Member[];
  invitations: Invitation[];
}
