/**
 * The auth context of a request, as a handler sees it: taken from the verified call token the gateway signs for
 * each downstream call (see service-tokens.ts), never from bare metadata.
 */
export interface AuthContext {
  userId: string;
  orgId: string;
  plan: string;
  role?: string;
  credential?: string;
  apiKeyId?: string;
}

/** Roles that manage an org's API keys, webhooks and members (API keys resolve to `admin`). */
export const isManagerRole = (role: string | undefined): boolean => role === "owner" || role === "admin";
