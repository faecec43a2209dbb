import { z } from "zod";

/** Shared request schemas. Objects are strict: unknown fields are a 400 (docs/concepts.md#errors). */
/**
 * The body of a route that takes none: absent (or empty) as today, or `{}`; any field is unknown, so a client that
 * sends options the route does not have learns so instead of having them silently ignored.
 */
export const noBody = z.strictObject({}).optional();

/** The query of a route that takes no parameters: any parameter is unknown (400). */
export const noQuery = z.strictObject({});

/** The paging parameters of every list route (docs/concepts.md, "Pagination"). */
export const cursorQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(50),
  cursor: z.string().min(1).max(500).optional(),
};

export const jobSpec = z.strictObject({
  type: z.string().min(1).max(64).describe("Job type, see GET /job-types"),
  inputs: z.record(z.string().max(64), z.string().max(4096)).default({}).describe("Inputs by name: an http(s) URL or the id of a complete upload, e.g. {source: 'https://...'} or {source: 'upload_...'}"),
  params: z.record(z.string().max(64), z.unknown()).default({}).describe("Type-specific parameters (JSON Schema in GET /job-types)"),
  metadata: z.record(z.string().max(64), z.unknown()).default({}).describe("Your own data, returned with the job"),
});

export const idempotencyKeyHeader = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x21-\x7e]+$/, "must be printable ASCII without spaces")
  .optional();

