import { z } from "zod";

const DURATION_UNITS_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Building blocks shared by service schemas. */
export const env = {
  url: (protocols: string[]) =>
    z.string().refine((value) => {
      try {
        return protocols.includes(new URL(value).protocol.replace(":", ""));
      } catch {
        return false;
      }
    }, `must be a URL (${protocols.join(", ")})`),
  port: (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback),
  bool: (fallback: boolean) =>
    z
      .enum(["true", "false", "1", "0"])
      .default(fallback ? "true" : "false")
      .transform((value) => value === "true" || value === "1"),
  /** Comma-separated list of non-negative integers (e.g. a retry schedule in ms). */
  intList: (fallback: string) =>
    z
      .string()
      .default(fallback)
      .refine((value) => /^\d+(,\d+)*$/.test(value.trim()), "must be a comma-separated list of integers")
      .transform((value) => value.split(",").map(Number)),
  /**
   * A length of time with its unit (`500ms`, `30s`, `90m`, `24h`, `7d`), parsed to milliseconds. A bare number is
   * refused: a value meant as seconds must not quietly be read as milliseconds.
   */
  duration: (fallback: string) =>
    z
      .string()
      .default(fallback)
      .transform((value, context) => {
        const match = /^(\d{1,12})(ms|s|m|h|d)$/.exec(value.trim());
        const ms = match ? Number(match[1]) * DURATION_UNITS_MS[match[2] as keyof typeof DURATION_UNITS_MS] : NaN;
        if (!Number.isSafeInteger(ms) || ms <= 0) {
          context.addIssue({ code: "custom", message: "must be a positive duration with a unit: ms, s, m, h or d (e.g. 24h)" });
          return z.NEVER;
        }
        return ms;
      }),
  mode: () => z.enum(["production", "development", "test"]).default("development"),
  /**
   * ALLOW_PRIVATE_ADDRESSES: the SSRF guards of job inputs and webhooks are on in every mode; only this explicit
   * `true` (a loopback demo, tests with local servers) turns them off.
   */
  allowPrivateAddresses: () => z.enum(["true", "false"]).default("false").transform((value) => value === "true"),
  logLevel: () => z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
};
