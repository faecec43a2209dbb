import { unauthorized } from "@renderbus/errors";
import type { auth } from "@renderbus/contracts";
import type { AuthResources } from "../auth-resources.js";
import { tokenHashOf } from "./oauth-provider.js";
import { membershipIn } from "../orgs/membership.js";

/** Opaque access tokens are Better Auth's random strings; anything else is refused before any lookup. */
const ACCESS_TOKEN_PATTERN = /^[A-Za-z0-9_.~-]{16,512}$/;

interface AccessTokenRow {
  userId: string | null;
  referenceId: string | null;
  sessionId: string | null;
  resources: unknown;
  expiresAt: Date;
  revoked: Date | null;
  sessionExpiresAt: Date | null;
}

/**
 * Resolves an OAuth access token presented to `resource` to the auth context of the org the user granted it for
 * (credential "oauth"). Checked on every call, in the database: the token exists (hash), has not expired or been
 * revoked, was issued for this resource (audience), its sign-in session is still alive (signing out cuts the agent
 * off), and the user is still a member of the org.
 * @throws AppError UNAUTHORIZED for anything else.
 */
export async function resolveAccessToken(store: AuthResources, token: string, resource: string): Promise<auth.AuthContext> {
  if (!ACCESS_TOKEN_PATTERN.test(token) || !resource) throw unauthorized();
  const { rows } = await store.pool.query<AccessTokenRow>(
    `select t."userId", t."referenceId", t."sessionId", t."resources", t."expiresAt", t."revoked", s."expiresAt" as "sessionExpiresAt"
       from "oauthAccessToken" t left join "session" s on s.id = t."sessionId"
      where t.token = $1`,
    [tokenHashOf(token)],
  );
  const row = rows[0];
  const now = Date.now();
  if (!row || !row.userId || !row.referenceId || row.revoked) throw unauthorized();
  if (row.expiresAt.getTime() <= now) throw unauthorized();
  if (!row.sessionExpiresAt || row.sessionExpiresAt.getTime() <= now) throw unauthorized();
  if (!resourcesOf(row.resources).includes(resource)) throw unauthorized();
  const membership = await membershipIn(store, row.userId, row.referenceId);
  if (!membership) throw unauthorized();
  return { userId: row.userId, orgId: row.referenceId, plan: membership.plan, apiKeyId: "", credential: "oauth", role: membership.role };
}

/** Better Auth stores string arrays as JSON text on PostgreSQL; accept a native array too. */
function resourcesOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((entry): entry is string => typeof entry === "string");
  if (typeof value !== "string") return [];
  try {
    const parsed: unknown = JSON.parse(value);
    return Array.isArray(parsed) ? parsed.filter((entry): entry is string => typeof entry === "string") : [value];
  } catch {
    return [value];
  }
}
