import { readFileSync } from "node:fs";
import { credsAuthenticator, type ConnectionOptions } from "@nats-io/nats-core";
import { natsInboxPrefix } from "./nats-permissions.js";

/**
 * How a process authenticates to NATS and secures the connection. Read from the environment by
 * {@link natsCredentialsFromEnv}, so every service takes the same variables without repeating them in its config:
 * - `NATS_USER` / `NATS_PASSWORD`: the service's user (deploy/nats: one per service, see nats-permissions.ts).
 * - `NATS_CREDS`: path of a `.creds` file (JWT + nkey seed) for servers run in operator/JWT mode, instead of a password.
 * - `NATS_TLS_CA`, `NATS_TLS_CERT`, `NATS_TLS_KEY`: PEM files; the CA verifies the server, the certificate and key
 *   are the client's for servers that require client certificates (mTLS). A `tls://` NATS_URL, or any of these,
 *   makes the client refuse a server that does not offer TLS.
 */
export interface NatsCredentials {
  user?: string;
  password?: string;
  credsFile?: string;
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
}

/** Shortest NATS password a production process accepts (the deploy Secret's `REPLACE_ME` placeholders are shorter). */
export const MIN_PRODUCTION_NATS_PASSWORD_LENGTH = 16;

/**
 * Thrown by `Bus.connect` in production when no NATS credentials are configured, or when the password is shorter than
 * {@link MIN_PRODUCTION_NATS_PASSWORD_LENGTH} (a placeholder left in the Secret).
 */
export class MissingNatsCredentialsError extends Error {
  override readonly name = "MissingNatsCredentialsError";
  constructor(message = "NATS_USER and NATS_PASSWORD (or NATS_CREDS) are required when MODE=production: NATS refuses anonymous clients") {
    super(message);
  }
}

/** The NATS credentials in `env` (see {@link NatsCredentials}); empty when none are set. */
export function natsCredentialsFromEnv(env: NodeJS.ProcessEnv = process.env): NatsCredentials {
  const tls = {
    ...(env.NATS_TLS_CA ? { caFile: env.NATS_TLS_CA } : {}),
    ...(env.NATS_TLS_CERT ? { certFile: env.NATS_TLS_CERT } : {}),
    ...(env.NATS_TLS_KEY ? { keyFile: env.NATS_TLS_KEY } : {}),
  };
  return {
    ...(env.NATS_USER ? { user: env.NATS_USER } : {}),
    ...(env.NATS_PASSWORD ? { password: env.NATS_PASSWORD } : {}),
    ...(env.NATS_CREDS ? { credsFile: env.NATS_CREDS } : {}),
    ...(Object.keys(tls).length > 0 ? { tls } : {}),
  };
}

/**
 * The nats.js connection options for `credentials` at `url`. A user gets its own inbox prefix, the only reply
 * subjects its permissions let it subscribe to.
 * @throws {MissingNatsCredentialsError} when `production` and neither a user nor a creds file is given.
 */
export function natsConnectionOptions(url: string, credentials: NatsCredentials, production: boolean): Partial<ConnectionOptions> {
  if (production && !credentials.user && !credentials.credsFile) throw new MissingNatsCredentialsError();
  if (production && credentials.user && (credentials.password ?? "").length < MIN_PRODUCTION_NATS_PASSWORD_LENGTH) {
    throw new MissingNatsCredentialsError(`NATS_PASSWORD must have at least ${MIN_PRODUCTION_NATS_PASSWORD_LENGTH} characters when MODE=production`);
  }
  const wantsTls = url.startsWith("tls://") || credentials.tls !== undefined;
  return {
    ...(credentials.user ? { user: credentials.user, pass: credentials.password ?? "", inboxPrefix: natsInboxPrefix(credentials.user) } : {}),
    ...(credentials.credsFile ? { authenticator: credsAuthenticator(readFileSync(credentials.credsFile)) } : {}),
    ...(wantsTls ? { tls: credentials.tls ?? {} } : {}),
  };
}

/**
 * Splits credentials out of a `nats://user:password@host:port` URL (the form local test servers are handed around
 * in, as nats.go accepts it); nats.js ignores them, so `Bus.connect` passes them on itself.
 */
export function splitNatsUrl(url: string): { url: string; credentials?: NatsCredentials } {
  const match = /^([a-z]+:\/\/)([^@/]*)@(.*)$/i.exec(url);
  if (!match) return { url };
  const [, scheme, userInfo, rest] = match as unknown as [string, string, string, string];
  const colon = userInfo.indexOf(":");
  const user = decodeURIComponent(colon < 0 ? userInfo : userInfo.slice(0, colon));
  const password = colon < 0 ? undefined : decodeURIComponent(userInfo.slice(colon + 1));
  return { url: `${scheme}${rest}`, credentials: { user, ...(password !== undefined ? { password } : {}) } };
}
