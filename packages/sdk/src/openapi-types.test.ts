import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
// Test-only: the generator builds the document from the gateway's route table, as /openapi.json does.
import { generateSdkOpenApiTypes, SDK_OPENAPI_TYPES } from "../../../scripts/sdk-openapi-types.js";

describe("the SDK's types generated from /openapi.json", () => {
  it("are up to date with the gateway's route table (else run `npm run openapi:types` and commit the result)", async () => {
    expect(readFileSync(SDK_OPENAPI_TYPES, "utf8") === (await generateSdkOpenApiTypes()), "packages/sdk/src/openapi.generated.ts is stale: run `npm run openapi:types`").toBe(true);
  }, 60_000);
});
