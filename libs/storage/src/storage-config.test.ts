import { describe, expect, it } from "vitest";
import { commonConfigSchema, parseConfig } from "@renderbus/config";
import { requireStorageSettings, storageVariables } from "./storage-config.js";

const schema = commonConfigSchema.extend(storageVariables).superRefine(requireStorageSettings);
const problems = (env: Record<string, string>) => {
  try {
    parseConfig(schema, env);
    return [];
  } catch (error) {
    return (error as { problems: { variable: string }[] }).problems.map((problem) => problem.variable).sort();
  }
};

describe("STORAGE and S3_* variables", () => {
  it("default to the local disk, with nothing else required", () => {
    expect(parseConfig(schema, {})).toMatchObject({ STORAGE: "local", S3_REGION: "us-east-1", S3_FORCE_PATH_STYLE: false });
  });

  it("require S3_BUCKET with STORAGE=s3 and accept the SDK's default credentials", () => {
    expect(problems({ STORAGE: "s3" })).toEqual(["S3_BUCKET"]);
    expect(parseConfig(schema, { STORAGE: "s3", S3_BUCKET: "renderbus-outputs", S3_FORCE_PATH_STYLE: "true" })).toMatchObject({ S3_BUCKET: "renderbus-outputs", S3_FORCE_PATH_STYLE: true });
  });

  it("refuse a malformed endpoint or bucket name, half a credential pair, or an unknown STORAGE", () => {
    expect(problems({ STORAGE: "s3", S3_BUCKET: "Bad_Bucket", S3_ENDPOINT: "minio:9000" })).toEqual(["S3_BUCKET", "S3_ENDPOINT"]);
    expect(problems({ STORAGE: "s3", S3_BUCKET: "b-1", S3_ACCESS_KEY_ID: "id" })).toEqual(["S3_SECRET_ACCESS_KEY"]);
    expect(problems({ STORAGE: "s3", S3_BUCKET: "b-1", S3_SECRET_ACCESS_KEY: "secret" })).toEqual(["S3_ACCESS_KEY_ID"]);
    expect(problems({ STORAGE: "gcs" })).toEqual(["STORAGE"]);
  });

  it("refuse in production a secret key published in this repository", () => {
    const env = { MODE: "production", STORAGE: "s3", S3_BUCKET: "b-1", S3_ACCESS_KEY_ID: "id" };
    expect(problems({ ...env, S3_SECRET_ACCESS_KEY: "REPLACE_ME" })).toEqual(["S3_SECRET_ACCESS_KEY"]);
    expect(problems({ ...env, S3_SECRET_ACCESS_KEY: "an-operator-chosen-secret" })).toEqual([]);
  });
});
