import { z } from "zod";

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
  mode: () => z.enum(["production", "development", "test"]).default("development"),
  /**
   * ALLOW_PRIVATE_ADDRESSES: the SSRF guards of job inputs and webhooks are on in every mode; only this explicit
   * `true` (a loopback demo, tests with local servers) turns them off.
   */
  allowPrivateAddresses: () => z.enum(["true", "false"]).default("false").transform((value) => value === "true"),
  logLevel: () => z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
};
