import { unauthorized } from "@renderbus/errors";
import type { auth } from "@renderbus/contracts";
import type { AuthResources } from "../auth-resources.js";
import { membershipOf } from "../orgs/membership.js";
import type { RenderbusAuth } from "./better-auth.js";

/**
 * Resolves a dashboard request's Cookie header to its auth context (credential "session"), in the session's active
 * organization (Better Auth's `set-active`; accepting an invitation sets it), else the user's oldest membership.
 * Not cached anywhere: a removed member or a changed role counts from the next request. @throws AppError UNAUTHORIZED for a missing, forged, expired or signed-out session.
 */
export async function resolveSession(betterAuth: RenderbusAuth, store: AuthResources, cookie: string): Promise<auth.AuthContext> {
  if (!cookie) throw unauthorized();
  let session: Awaited<ReturnType<RenderbusAuth["api"]["getSession"]>>;
  try {
    session = await betterAuth.api.getSession({ headers: new Headers({ cookie }) });
  } catch {
    // Better Auth throws on some malformed cookies; for the caller they are simply invalid credentials.
    throw unauthorized();
  }
  if (!session) throw unauthorized();
  const membership = await membershipOf(store, session.user.id, session.session.activeOrganizationId);
  if (!membership) throw unauthorized();
  return { userId: session.user.id, orgId: membership.orgId, plan: membership.plan, apiKeyId: "", credential: "session", role: membership.role };
}
