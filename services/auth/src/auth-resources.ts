import type { Kysely } from "kysely";
import type pg from "pg";
import type { Plan, PlanName } from "@renderbus/plans";
import type { AuthConfig } from "./config.js";
import type { SecretBox } from "@renderbus/secret-box";
import type { AuthTables } from "./database.js";

/**
 * What every auth feature is handed (opened by openAuthResources): the `auth` schema, the plan table, the secrets
 * box and the mode. It imports no feature, so every feature may depend on it.
 */
export interface AuthResources {
  db: Kysely<AuthTables>;
  /** Pool whose search_path is the `auth` schema; Better Auth and the outbox relay use it too. */
  pool: pg.Pool;
  plans: Record<PlanName, Plan>;
  secretBox: SecretBox;
  mode: AuthConfig["MODE"];
  /** `required`: orgs a user creates hold their credits until the user's address is confirmed (billing/held-credits.ts). */
  emailVerification: AuthConfig["EMAIL_VERIFICATION"];
  close(): Promise<void>;
}
