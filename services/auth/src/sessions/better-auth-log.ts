import type { Logger } from "@renderbus/telemetry";

type BetterAuthLevel = "debug" | "info" | "warn" | "error";

/**
 * Better Auth's schema check compares PostgreSQL's type names with a list that has `bigint` but not `int8`, which is
 * what PostgreSQL reports for the bigint columns Better Auth itself creates (`rateLimit.lastRequest`): a false
 * warning at every start, which would teach operators to skip warnings. Only that exact mismatch is dropped.
 */
const FALSE_TYPE_WARNING = /^Field \w+ in table \w+ has a different type in the database\. Expected number but got int8\.$/;

/**
 * Better Auth's log lines, as our structured log lines (its own logger prints coloured text to the console), minus
 * its known false schema warning. Without a logger (one-off migrations) they go nowhere but a real warning or error,
 * which still reaches stderr as text.
 */
export function betterAuthLog(logger: Logger | undefined): (level: BetterAuthLevel, message: string, ...args: unknown[]) => void {
  return (level, message, ...args) => {
    if (FALSE_TYPE_WARNING.test(message)) return;
    if (logger) logger[level]({ component: "better-auth", ...fieldsOf(args) }, message);
    else if (level === "warn" || level === "error") console.error(`[better-auth] ${level}: ${message}`);
  };
}

/**
 * Its extra arguments as log fields: an Error as `err` (pino's serializer keeps its message and stack, which an Error
 * inside an array loses), plain objects merged under `details`, one level down, where the logger's redaction of
 * tokens, cookies and secrets (`*.token`, ...) still reaches them; anything else is left out.
 */
function fieldsOf(args: unknown[]): { err?: Error; details?: Record<string, unknown> } {
  const err = args.find((arg): arg is Error => arg instanceof Error);
  const objects = args.filter((arg): arg is Record<string, unknown> => arg !== err && typeof arg === "object" && arg !== null && !Array.isArray(arg));
  return { ...(err ? { err } : {}), ...(objects.length > 0 ? { details: Object.assign({}, ...objects) as Record<string, unknown> } : {}) };
}
