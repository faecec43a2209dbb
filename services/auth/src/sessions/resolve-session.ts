import { unauthorized } from "@renderbus/errors";
import type { auth } from "@renderbus/contracts";
import type { AuthStore } from "../store.js";
import { defaultMembershipOf } from "../orgs/orgs.service.js";
import type { RenderbusAuth } from "./better-auth.js";

/**
 * Resolves a dashboard request's Cookie header to its auth context (credential "session"), in the user's personal
 * org. @throws AppError UNAUTHORIZED for a missing, forged, expired or signed-out session.
 */
export async function resolveSession(betterAuth: RenderbusAuth, store: AuthStore, cookie: string): Promise<auth.AuthContext> {
  if (!cookie) throw unauthorized();
  let session: Awaited<ReturnType<RenderbusAuth["api"]["getSession"]>>;
  try {
    session = await betterAuth.api.getSession({ headers: new Headers({ cookie }) });
  } catch {
    // Better Auth throws on some malformed cookies; for the caller they are simply invalid credentials.
    throw unauthorized();
  }
  if (!session) throw unauthorized();
  const membership = await defaultMembershipOf(store, session.user.id);
  if (!membership) throw unauthorized();
  return { userId: session.user.id, orgId: membership.orgId, plan: membership.plan, apiKeyId: "", credential: "session", role: membership.role };
}
