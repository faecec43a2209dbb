import type { Logger } from "@renderbus/telemetry";
import type { Mailer } from "./mailer.js";
import { oneLine } from "./one-line.js";

/** What Better Auth's organization plugin hands `sendInvitationEmail` (the parts read here). */
export interface InvitationToSend {
  id: string;
  role: string;
  email: string;
  organization: { name: string };
  inviter: { user: { id: string; name: string; email: string; emailVerified: boolean } };
}

/** The dashboard page that accepts an invitation (apps/dashboard InvitationPage). */
export function invitationUrl(publicUrl: string, invitationId: string): string {
  return new URL(`/app/invitations/${encodeURIComponent(invitationId)}`, publicUrl).toString();
}

/** The invitation email: who invites, to which org and role, and the page that accepts it. */
export function invitationEmail(invitation: InvitationToSend, publicUrl: string) {
  const inviter = invitation.inviter.user;
  const name = oneLine(inviter.name, 80);
  const who = name ? `${name} (${inviter.email})` : inviter.email;
  const org = oneLine(invitation.organization.name, 80);
  return {
    to: invitation.email,
    subject: `Join ${org} on Renderbus`,
    text: [
      `${who} invited you to the organization "${org}" on Renderbus, as ${invitation.role}.`,
      "",
      `To accept, open this page and sign in (or sign up) with ${invitation.email}:`,
      "",
      invitationUrl(publicUrl, invitation.id),
      "",
      "The invitation expires in 7 days. If you did not expect it, ignore this email.",
    ].join("\n"),
  };
}

/**
 * The organization plugin's `sendInvitationEmail`. Only an inviter whose own address is confirmed gets one sent, so
 * nobody can mail strangers from an account made with an address they do not own; the dashboard shows the link to
 * share either way. The email leaves in the background: a mail server that refuses it does not fail the invitation
 * (logged with the invitation id).
 */
export function sendInvitationEmailWith(mailer: Mailer, publicUrl: string, logger?: Logger) {
  return async (invitation: InvitationToSend): Promise<void> => {
    if (!invitation.inviter.user.emailVerified) return;
    mailer.send(invitationEmail(invitation, publicUrl)).catch((error: unknown) => {
      logger?.warn({ invitationId: invitation.id, err: { message: (error as Error).message } }, "invitation email not sent");
    });
  };
}
