import { describe, expect, it } from "vitest";
import { createSecretBox } from "@renderbus/secret-box";
import { DEFAULT_PLANS } from "@renderbus/plans";
import { resolveEndpoints } from "./endpoint-directory.js";
import { DEFAULT_ENDPOINT_ID } from "./endpoint-rules.js";

const box = createSecretBox([{ kid: "k1", key: Buffer.alloc(32, 7) }]);
const target = { orgId: "org_1", plan: DEFAULT_PLANS.pro, url: "https://hooks.example.com/in" };

describe("the org's default endpoint", () => {
  it("signs with the org's secret from the auth service", () => {
    const [endpoint] = resolveEndpoints({ ...target, secret: "whsec_abc" }, [], box);
    expect(endpoint).toMatchObject({ id: DEFAULT_ENDPOINT_ID, url: target.url, secrets: ["whsec_abc"] });
    expect(endpoint!.secretProblem).toBeUndefined();
  });

  it("carries a secret problem, no secret, when the auth service cannot open the org's secret: its deliveries fail unsent", () => {
    const [endpoint] = resolveEndpoints({ ...target, secret: undefined, secretUnreadable: true }, [], box);
    expect(endpoint).toMatchObject({ id: DEFAULT_ENDPOINT_ID, secrets: [], secretProblem: "the org's webhook secret does not open in the auth service" });
  });
});
