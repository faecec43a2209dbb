import { z } from "zod";
import { env, isKnownDevelopmentSecret } from "@renderbus/config";
import { createLocalObjectStore } from "./local-object-store.js";
import type { ObjectStore } from "./object-store.js";
import { createS3ObjectStore } from "./s3-object-store.js";

/** S3's bucket naming rules (3-63 lowercase letters, digits, dots and hyphens, starting and ending alphanumeric). */
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/**
 * The object store's variables, in every schema of a service that reads or writes objects (gateway, worker):
 * `commonConfigSchema.extend({ ...storageVariables, ... }).superRefine(requireStorageSettings)`.
 * docs/operations.md ("Object storage") documents them.
 */
export const storageVariables = {
  /** `local`: files under a directory (one machine, or a shared volume); `s3`: a bucket of an S3-compatible service. */
  STORAGE: z.enum(["local", "s3"]).default("local"),
  /** The S3 service's URL (MinIO, Ceph, R2...); unset: AWS S3 in S3_REGION. */
  S3_ENDPOINT: env.url(["http", "https"]).optional(),
  /** The endpoint presigned download links name when clients reach the service elsewhere than the services do. */
  S3_PUBLIC_ENDPOINT: env.url(["http", "https"]).optional(),
  S3_REGION: z.string().min(1).default("us-east-1"),
  /** Required with STORAGE=s3. Outputs go under `outputs/` in it, uploads under `uploads/`. */
  S3_BUCKET: z.string().regex(BUCKET_NAME, "must be an S3 bucket name").optional(),
  /** Static credentials, both or neither; unset: the SDK's default chain (AWS_* variables, web identity, instance role). */
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  /** `true`: `http://host/bucket/key` URLs (MinIO and most self-hosted services) instead of `bucket.host`. */
  S3_FORCE_PATH_STYLE: env.bool(false),
};

/** The parsed {@link storageVariables}, with the MODE every service has. */
export type StorageConfig = z.infer<z.ZodObject<typeof storageVariables>> & { MODE: string };

/**
 * A `superRefine` for a schema with {@link storageVariables}: STORAGE=s3 needs S3_BUCKET, credentials come in pairs,
 * and production refuses a secret key published in this repository (docker-compose.yml's MinIO one).
 */
export function requireStorageSettings<T extends StorageConfig>(config: T, context: z.core.$RefinementCtx<T>): void {
  if (config.STORAGE !== "s3") return;
  if (!config.S3_BUCKET) context.addIssue({ code: "custom", path: ["S3_BUCKET"], message: "is required with STORAGE=s3" });
  if ((config.S3_ACCESS_KEY_ID === undefined) !== (config.S3_SECRET_ACCESS_KEY === undefined)) {
    context.addIssue({ code: "custom", path: [config.S3_ACCESS_KEY_ID ? "S3_SECRET_ACCESS_KEY" : "S3_ACCESS_KEY_ID"], message: "S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY go together" });
  }
  if (config.MODE === "production" && config.S3_SECRET_ACCESS_KEY && isKnownDevelopmentSecret(config.S3_SECRET_ACCESS_KEY)) {
    context.addIssue({ code: "custom", path: ["S3_SECRET_ACCESS_KEY"], message: "is a published development value: production needs a secret of its own" });
  }
}

/**
 * The store of one kind of object from the configuration: `localDir` with STORAGE=local, the `<area>/` prefix of
 * S3_BUCKET with STORAGE=s3.
 */
export function createObjectStore(config: StorageConfig, { area, localDir }: { area: "outputs" | "uploads"; localDir: string }): ObjectStore {
  if (config.STORAGE === "local") return createLocalObjectStore(localDir);
  return createS3ObjectStore({
    bucket: config.S3_BUCKET!,
    prefix: `${area}/`,
    endpoint: config.S3_ENDPOINT,
    publicEndpoint: config.S3_PUBLIC_ENDPOINT,
    region: config.S3_REGION,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
    credentials: config.S3_ACCESS_KEY_ID && config.S3_SECRET_ACCESS_KEY ? { accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY } : undefined,
  });
}
