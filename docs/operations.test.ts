import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { authConfigSchema } from "../services/auth/src/config.js";
import { gatewayConfigSchema } from "../services/gateway/src/config.js";
import { jobsConfigSchema } from "../services/jobs/src/config.js";
import { configSchema as dispatcherConfigSchema } from "../services/webhook-dispatcher/src/config.js";
import { workerConfigSchema } from "../services/worker/src/config.js";

const operations = readFileSync(join(resolve(import.meta.dirname), "operations.md"), "utf8");
const SCHEMAS: Record<string, z.ZodObject> = {
  gateway: gatewayConfigSchema,
  auth: authConfigSchema as unknown as z.ZodObject,
  jobs: jobsConfigSchema,
  worker: workerConfigSchema,
  "webhook-dispatcher": dispatcherConfigSchema,
};

/** Variables named in the first column of a table row: "| `NAME` | ...". */
const documented = new Set([...operations.matchAll(/^\| `([A-Z0-9_<>]+)` \|/gm)].map((match) => match[1]!));

describe("docs/operations.md", () => {
  it.each(Object.entries(SCHEMAS))("documents every environment variable the %s service reads", (_service, schema) => {
    const variables = Object.keys(schema.shape);
    expect(variables.length).toBeGreaterThan(3);
    expect(variables.filter((variable) => !documented.has(variable))).toEqual([]);
  });
});
