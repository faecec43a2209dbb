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
    const details = args.length > 0 ? { details: args } : {};
    if (logger) logger[level]({ component: "better-auth", ...details }, message);
    else if (level === "warn" || level === "error") console.error(`[better-auth] ${level}: ${message}`);
  };
}
