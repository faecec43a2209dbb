import type { KeyObject } from "node:crypto";
import { decodeJwt, decodeProtectedHeader, jwtVerify, SignJWT, type JWTPayload } from "jose";
import { ConfigError, type RpcTransportVariables } from "@renderbus/config";
import type { AuthContext } from "./auth-context.js";
import { loadRpcTransport, PLAINTEXT_RPC_TRANSPORT, type RpcTransport } from "./rpc-transport.js";
import { isServiceName, serviceKeyringOf, type ServiceKey, type ServiceKeyring, type ServiceName } from "./service-keys.js";

/** Lifetime of a call token; verifiers refuse longer ones. */
export const CALL_TOKEN_LIFETIME_S = 60;
/** Clock skew tolerated between services when checking `iat` and `exp`. */
const CLOCK_TOLERANCE_S = 5;
/** A cached token is signed afresh once less than this is left, so it never expires on the way. */
const REUSE_MARGIN_S = 30;
/** Bound of the signing and verification caches (entries live at most a minute). */
const MAX_CACHED_TOKENS = 10_000;

/** Who made an internal call, as proven by its token. */
export interface Caller {
  /** The calling service (`iss`). */
  service: ServiceName;
  /** The tenant the call acts for, when the token carries one (the gateway's tokens for a user or API key do). */
  auth: AuthContext | undefined;
}

/** Thrown by {@link ServiceIdentity.verify} for a missing, malformed, forged, expired or misaddressed token. */
export class CallTokenError extends Error {
  override readonly name = "CallTokenError";
}

/** Anything that can put a token on an outgoing call: a service's own identity, or a test's stand-in. */
export interface CallCredentials {
  /** A token for a call of `method` (full gRPC path) to `audience`, acting for `auth` when given. */
  tokenFor(audience: ServiceName, method: string, auth?: AuthContext): Promise<string>;
  /** How the call's connection is protected (rpc-transport.ts); plaintext when absent. */
  readonly transport?: RpcTransport;
}

interface TenantClaims extends JWTPayload {
  org?: string;
  plan?: string;
  role?: string;
  uid?: string;
  cred?: string;
}

const epochSeconds = () => Math.floor(Date.now() / 1000);

/**
 * A service's identity on the internal plane: signs the short-lived EdDSA (Ed25519) JWTs its gRPC calls carry
 * (`iss` = this service, `aud` = the callee, `sub` = the user or API key it acts for, else this service) with its own
 * private key, and verifies the tokens of calls it receives with the issuers' public keys (`aud` must be this service,
 * the issuer's key must be in the keyring). Holding a caller's public key does not let a service sign as that caller.
 */
export class ServiceIdentity implements CallCredentials {
  private readonly signingKey: ServiceKey & { privateKey: KeyObject };
  private readonly signed = new Map<string, { token: string; exp: number }>();
  private readonly verified = new Map<string, { caller: Caller; exp: number }>();

  constructor(
    readonly service: ServiceName,
    private readonly keyring: ServiceKeyring,
    /** The credentials of this service's gRPC connections, as a server and as a client. */
    readonly transport: RpcTransport = PLAINTEXT_RPC_TRANSPORT,
  ) {
    const own = keyring.get(service)?.find((key): key is ServiceKey & { privateKey: KeyObject } => key.privateKey !== undefined);
    if (!own) throw new Error(`no private key for ${service}`);
    this.signingKey = own;
  }

  async tokenFor(audience: ServiceName, _method: string, auth?: AuthContext): Promise<string> {
    const cacheKey = auth ? `${audience}\n${auth.apiKeyId ?? ""}\n${auth.userId}\n${auth.orgId}\n${auth.plan}\n${auth.role ?? ""}\n${auth.credential ?? ""}` : audience;
    const now = epochSeconds();
    const cached = this.signed.get(cacheKey);
    if (cached && cached.exp - now > REUSE_MARGIN_S) return cached.token;
    const exp = now + CALL_TOKEN_LIFETIME_S;
    const claims: TenantClaims = auth
      ? {
          org: auth.orgId,
          plan: auth.plan,
          uid: auth.userId,
          ...(auth.role ? { role: auth.role } : {}),
          ...(auth.credential ? { cred: auth.credential } : {}),
        }
      : {};
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: "EdDSA", kid: this.signingKey.kid, typ: "JWT" })
      .setIssuer(this.service)
      .setSubject(auth ? (auth.apiKeyId ?? auth.userId) : this.service)
      .setAudience(audience)
      .setIssuedAt(now)
      .setExpirationTime(exp)
      .sign(this.signingKey.privateKey);
    if (this.signed.size >= MAX_CACHED_TOKENS) this.signed.clear();
    this.signed.set(cacheKey, { token, exp });
    return token;
  }

  /** The caller a token proves, or CallTokenError. */
  async verify(token: string): Promise<Caller> {
    const now = epochSeconds();
    const cached = this.verified.get(token);
    if (cached && cached.exp + CLOCK_TOLERANCE_S >= now) return cached.caller;

    let kid: string | undefined;
    let issuer: unknown;
    try {
      kid = decodeProtectedHeader(token).kid;
      issuer = decodeJwt(token).iss;
    } catch {
      throw new CallTokenError("malformed token");
    }
    if (!isServiceName(issuer)) throw new CallTokenError("unknown issuer");
    const key = this.keyring.get(issuer)?.find((candidate) => candidate.kid === kid);
    if (!key) throw new CallTokenError(`no key ${issuer}:${kid ?? "(none)"}`);
    let payload: TenantClaims;
    try {
      // The algorithm is the key's, never the token's header: an HS256 token "signed" with a public key is refused.
      ({ payload } = await jwtVerify<TenantClaims>(token, key.publicKey, {
        algorithms: ["EdDSA"],
        issuer,
        audience: this.service,
        requiredClaims: ["sub", "exp", "iat"],
        maxTokenAge: CALL_TOKEN_LIFETIME_S,
        clockTolerance: CLOCK_TOLERANCE_S,
      }));
    } catch (error) {
      throw new CallTokenError((error as Error).message);
    }
    if (payload.exp! - payload.iat! > CALL_TOKEN_LIFETIME_S) throw new CallTokenError("token lives longer than allowed");
    const caller: Caller = { service: issuer, auth: authOf(payload) };
    if (this.verified.size >= MAX_CACHED_TOKENS) this.verified.clear();
    this.verified.set(token, { caller, exp: payload.exp! });
    return caller;
  }
}

function authOf(payload: TenantClaims): AuthContext | undefined {
  const { org, plan, uid, sub } = payload;
  if (typeof org !== "string" || org === "") return undefined;
  if (typeof plan !== "string" || typeof uid !== "string") throw new CallTokenError("tenant claims incomplete");
  const credential = typeof payload.cred === "string" ? payload.cred : undefined;
  return {
    userId: uid,
    orgId: org,
    plan,
    role: typeof payload.role === "string" ? payload.role : undefined,
    credential,
    // `sub` names the API key when the call acts through one, else the user.
    ...(typeof sub === "string" && sub !== uid ? { apiKeyId: sub } : {}),
  };
}

/**
 * The identity of `service` from its config: its call-token keys (SERVICE_TOKEN_KEYS and MODE; development keys
 * outside production) and its gRPC transport (RPC_TRANSPORT and RPC_TLS_*, their files read here, at start-up).
 * Throws one ConfigError naming every variable at fault: SERVICE_TOKEN_KEYS when production lacks real keys,
 * RPC_TRANSPORT when production has neither `tls` nor `mesh`, an RPC_TLS_* file missing, unreadable or invalid.
 */
export function serviceIdentity(service: ServiceName, config: { MODE?: string; SERVICE_TOKEN_KEYS?: string | undefined } & RpcTransportVariables): ServiceIdentity {
  const problems: ConfigError["problems"] = [];
  const attempt = <T>(load: () => T): T | undefined => {
    try {
      return load();
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      problems.push(...error.problems);
      return undefined;
    }
  };
  const keyring = attempt(() => serviceKeyringOf(service, config));
  const transport = attempt(() => loadRpcTransport(config));
  if (problems.length > 0) throw new ConfigError(problems);
  return new ServiceIdentity(service, keyring!, transport!);
}
