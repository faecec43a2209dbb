import { Metadata } from "@grpc/grpc-js";

/** The auth context of SPEC section 3, as it travels between services. */
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

const KEYS = { userId: "x-rb-user-id", orgId: "x-rb-org-id", plan: "x-rb-plan", role: "x-rb-role", credential: "x-rb-credential" } as const;

/** Writes the auth context into gRPC metadata (the gateway does this on every downstream call). */
export function writeAuthMetadata(metadata: Metadata, auth: AuthContext): void {
  metadata.set(KEYS.userId, auth.userId);
  metadata.set(KEYS.orgId, auth.orgId);
  metadata.set(KEYS.plan, auth.plan);
  if (auth.role) metadata.set(KEYS.role, auth.role);
  if (auth.credential) metadata.set(KEYS.credential, auth.credential);
}

/** Reads the auth context from call metadata, or undefined for internal calls that carry none. */
export function readAuthMetadata(metadata: Metadata): AuthContext | undefined {
  const get = (key: string) => {
    const value = metadata.get(key)[0];
    return typeof value === "string" && value !== "" ? value : undefined;
  };
  const orgId = get(KEYS.orgId);
  const userId = get(KEYS.userId);
  const plan = get(KEYS.plan);
  if (!orgId || !userId || !plan) return undefined;
  return { orgId, userId, plan, role: get(KEYS.role), credential: get(KEYS.credential) };
}
