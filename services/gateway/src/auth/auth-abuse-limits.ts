import { createHash } from "node:crypto";
import { isIPv6 } from "node:net";
import type { Redis } from "ioredis";
import { AppError, serviceUnavailable } from "@renderbus/errors";
import type { GatewayConfig } from "../config.js";
import { SlidingWindowLimiter } from "./sliding-window-limiter.js";

/** The budgets an `/auth/*` request can be counted against. */
export type AuthBudgetName = "sign-in-account-ip" | "sign-in-account" | "sign-in-ip" | "sign-up-ip" | "client-registration-ip" | "password-reset-ip" | "verification-email-ip";

/** One budget a request spends from: whose (`subject`), how much there is, and whether success gives it back. */
export interface AuthBudget {
  name: AuthBudgetName;
  subject: string;
  limit: number;
  /** Successful sign-ins are given back, so only failed guesses lock an account. */
  refundOnSuccess: boolean;
  /**
   * The account and client of a sign-in: a client that signed in to the account before is let past this budget
   * when it is spent (and remembered again on each success), so guesses from elsewhere cannot lock the owner out.
   */
  knownClient?: { account: string; client: string };
}

/** What the limits look at: the normalised path the proxy forwards to, the method, the body and the client IP. */
export interface AuthAttempt {
  method: string;
  /** The upstream path after normalisation (auth-upstream-url.ts): what the auth service will route on. */
  pathname: string;
  contentType: string | undefined;
  body: Buffer | undefined;
  /** `request.ip`: the socket peer, or the client a TRUSTED_PROXIES proxy forwarded for. */
  ip: string;
}

type LimitConfig = Pick<
  GatewayConfig,
  | "AUTH_SIGN_IN_PER_ACCOUNT_LIMIT"
  | "AUTH_SIGN_IN_PER_ACCOUNT_ALL_IPS_LIMIT"
  | "AUTH_SIGN_IN_PER_IP_LIMIT"
  | "AUTH_SIGN_UP_PER_IP_LIMIT"
  | "AUTH_CLIENT_REGISTRATION_PER_IP_LIMIT"
  | "AUTH_PASSWORD_RESET_PER_IP_LIMIT"
  | "AUTH_VERIFICATION_EMAIL_PER_IP_LIMIT"
>;

const PASSWORD_RESET_PATHS = ["/auth/request-password-reset", "/auth/forget-password", "/auth/reset-password", "/auth/change-password"];

/**
 * Which budgets an attempt spends (pure; the order is the order they are charged in). Reads never count: only
 * methods that change something do. Paths are compared case-insensitively, decoded and without trailing or doubled
 * slashes, so no spelling the auth service would route the same way slips past.
 */
export function authBudgetsOf(attempt: AuthAttempt, config: LimitConfig): AuthBudget[] {
  if (attempt.method === "GET" || attempt.method === "HEAD" || attempt.method === "OPTIONS") return [];
  const path = comparablePath(attempt.pathname);
  const ip = clientKeyOf(attempt.ip);
  // An account's wrong guesses lock it for the client that made them: counted per account alone, anyone who knows an
  // email could lock its owner out with five wrong passwords. Guesses spread over many addresses meet the looser
  // per-account budget; while that one is spent, addresses the account signed in from before still get through.
  const signIn = (email: string | undefined): AuthBudget[] => [
    ...(email
      ? [
          { name: "sign-in-account-ip" as const, subject: `sign-in:account-ip:${accountKeyOf(email)}:${ip}`, limit: config.AUTH_SIGN_IN_PER_ACCOUNT_LIMIT, refundOnSuccess: true },
          {
            name: "sign-in-account" as const,
            subject: `sign-in:account:${accountKeyOf(email)}`,
            limit: config.AUTH_SIGN_IN_PER_ACCOUNT_ALL_IPS_LIMIT,
            refundOnSuccess: true,
            knownClient: { account: accountKeyOf(email), client: ip },
          },
        ]
      : []),
    { name: "sign-in-ip", subject: `sign-in:ip:${ip}`, limit: config.AUTH_SIGN_IN_PER_IP_LIMIT, refundOnSuccess: false },
  ];
  const signUp: AuthBudget[] = [{ name: "sign-up-ip", subject: `sign-up:ip:${ip}`, limit: config.AUTH_SIGN_UP_PER_IP_LIMIT, refundOnSuccess: false }];

  if (path === "/auth/sign-in/email") return signIn(emailOf(attempt));
  // The OAuth flow's own page (oauth-pages.ts) signs in or signs up with a form; it calls Better Auth in process, so
  // this proxy is the only place its attempts can be counted.
  if (path === "/auth/oauth/sign-in") {
    // Every post counts as a sign-in for its email, sign-ups too: the page reads only the first 16 KB of the form,
    // so a `mode` this parser sees might not be the one the page acts on.
    const form = formOf(attempt);
    return [...signIn(form?.get("email") || undefined), ...(form?.get("mode") === "sign-up" ? signUp : [])];
  }
  if (path === "/auth/sign-in" || path.startsWith("/auth/sign-in/")) return signIn(undefined);
  if (path === "/auth/sign-up" || path.startsWith("/auth/sign-up/")) return signUp;
  if (path === "/auth/oauth2/register") {
    return [{ name: "client-registration-ip", subject: `client-registration:ip:${ip}`, limit: config.AUTH_CLIENT_REGISTRATION_PER_IP_LIMIT, refundOnSuccess: false }];
  }
  if (PASSWORD_RESET_PATHS.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))) {
    return [{ name: "password-reset-ip", subject: `password-reset:ip:${ip}`, limit: config.AUTH_PASSWORD_RESET_PER_IP_LIMIT, refundOnSuccess: false }];
  }
  // Each one sends an email to an address the caller names: not a way to flood someone's mailbox.
  if (path === "/auth/send-verification-email") {
    return [{ name: "verification-email-ip", subject: `verification-email:ip:${ip}`, limit: config.AUTH_VERIFICATION_EMAIL_PER_IP_LIMIT, refundOnSuccess: false }];
  }
  return [];
}

/** Budgets an attempt was let through on, to settle once the auth service has answered. */
export interface SpentBudgets {
  settle(status: number): Promise<void>;
}

/**
 * The abuse limits on `/auth/*` (SECURITY-AUDIT finding 3), shared by every gateway replica through Redis. Better
 * Auth has a limiter of its own (on in every mode, better-auth.ts) keyed by the IP the gateway forwards; it is set
 * looser than these, so a client meets these first and gets the documented 429 body (docs/concepts.md#rate-limits).
 */
export class AuthAbuseLimits {
  private readonly limiter: SlidingWindowLimiter;
  private readonly windowMs: number;
  private readonly prefix: string;

  constructor(
    private readonly redis: Redis,
    private readonly config: LimitConfig & Pick<GatewayConfig, "AUTH_LIMIT_WINDOW_SECONDS" | "NATS_NAMESPACE">,
  ) {
    // Deployments (and test systems) that share one Redis keep their counts apart by namespace.
    this.prefix = config.NATS_NAMESPACE ? `rb:auth-limit:${config.NATS_NAMESPACE}` : "rb:auth-limit";
    this.limiter = new SlidingWindowLimiter(redis, this.prefix);
    this.windowMs = config.AUTH_LIMIT_WINDOW_SECONDS * 1000;
  }

  private knownKey(account: string): string {
    return `${this.prefix}:known:${account}`;
  }

  /**
   * Charges the attempt to its budgets.
   * @throws AppError RATE_LIMITED (with `retryAfterSeconds`) when one is spent; nothing stays charged then.
   * @throws AppError SERVICE_UNAVAILABLE when Redis cannot be reached (the limits fail closed).
   */
  async spend(attempt: AuthAttempt): Promise<SpentBudgets> {
    const charged: { budget: AuthBudget; attempt: string }[] = [];
    const budgets = authBudgetsOf(attempt, this.config);
    try {
      for (const budget of budgets) {
        const decision = await this.limiter.attempt(budget.subject, budget.limit, this.windowMs);
        if (!decision.allowed && budget.knownClient && (await this.redis.sismember(this.knownKey(budget.knownClient.account), budget.knownClient.client)) === 1) {
          continue; // the owner, from where they signed in before
        }
        if (!decision.allowed) {
          await this.refund(charged);
          throw new AppError("RATE_LIMITED", rateLimitedMessage(budget.name), { retryAfterSeconds: decision.retryAfterSeconds });
        }
        charged.push({ budget, attempt: decision.attempt! });
      }
    } catch (error) {
      if (error instanceof AppError) throw error;
      throw serviceUnavailable();
    }
    const known = budgets.find((budget) => budget.knownClient)?.knownClient;
    return {
      settle: async (status) => {
        if (status >= 400) return;
        await this.refund(charged.filter(({ budget }) => budget.refundOnSuccess)).catch(() => undefined);
        if (known) {
          const key = this.knownKey(known.account);
          await this.redis
            .multi()
            .sadd(key, known.client)
            .pexpire(key, KNOWN_CLIENT_MS)
            .exec()
            .catch(() => undefined);
        }
      },
    };
  }

  private async refund(charged: { budget: AuthBudget; attempt: string }[]): Promise<void> {
    await Promise.all(charged.map(({ budget, attempt }) => this.limiter.refund(budget.subject, attempt)));
  }
}

/** How long an address an account signed in from stays known to it (renewed by each sign-in from there). */
const KNOWN_CLIENT_MS = 30 * 24 * 60 * 60 * 1000;

function rateLimitedMessage(name: AuthBudgetName): string {
  switch (name) {
    case "sign-in-account-ip":
    case "sign-in-account":
      return "Too many sign-in attempts for this account; retry later";
    case "sign-in-ip":
      return "Too many sign-in attempts from this address; retry later";
    case "sign-up-ip":
      return "Too many sign-ups from this address; retry later";
    case "client-registration-ip":
      return "Too many OAuth client registrations from this address; retry later";
    case "password-reset-ip":
      return "Too many password requests from this address; retry later";
    case "verification-email-ip":
      return "Too many confirmation emails asked for from this address; retry later";
  }
}

function comparablePath(pathname: string): string {
  let decoded = pathname;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    // Malformed escapes: compare the path as sent.
  }
  return decoded.toLowerCase().replace(/\/{2,}/g, "/").replace(/(.)\/+$/, "$1");
}

/** Accounts are counted by a hash of the normalised email, so Redis holds no addresses. */
function accountKeyOf(email: string): string {
  return createHash("sha256").update(email.trim().toLowerCase()).digest("base64url");
}

/** IPv6 clients are counted by /64: one host usually holds a whole /64 and could rotate through it. */
function clientKeyOf(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (!isIPv6(ip)) return ip;
  const [head = "", tail = ""] = ip.toLowerCase().split("::");
  const headGroups = head ? head.split(":") : [];
  const tailGroups = tail ? tail.split(":") : [];
  const groups = ip.includes("::") ? [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill("0"), ...tailGroups] : headGroups;
  return `${groups.slice(0, 4).map((group) => group.replace(/^0+(?=.)/, "")).join(":")}::/64`;
}

// Better Auth reads a body as JSON when its type matches this (better-call's own test), else as a form.
const JSON_CONTENT_TYPE = /^application\/([a-z0-9.+-]*\+)?json/i;

/**
 * The email a sign-in is for, read the way Better Auth will read it (JSON, or a urlencoded form where the last value
 * of a repeated field wins). A multipart body is refused: Better Auth would read it, this parser does not.
 */
function emailOf(attempt: AuthAttempt): string | undefined {
  const contentType = (attempt.contentType ?? "").toLowerCase();
  if (!attempt.body || attempt.body.length === 0) return undefined;
  if (JSON_CONTENT_TYPE.test(contentType)) {
    try {
      const value: unknown = (JSON.parse(attempt.body.toString("utf8")) as Record<string, unknown> | null)?.email;
      return typeof value === "string" && value.trim() !== "" ? value : undefined;
    } catch {
      return undefined;
    }
  }
  if (contentType.includes("application/x-www-form-urlencoded")) return new URLSearchParams(attempt.body.toString("utf8")).getAll("email").at(-1) || undefined;
  if (contentType.includes("multipart/form-data")) throw new AppError("VALIDATION_ERROR", "body: sign-in takes JSON or a urlencoded form");
  return undefined;
}

/** The OAuth sign-in page's form, read as the page reads it (the first value of a repeated field wins). */
function formOf(attempt: AuthAttempt): URLSearchParams | undefined {
  if (!attempt.body) return undefined;
  return new URLSearchParams(attempt.body.toString("utf8"));
}
