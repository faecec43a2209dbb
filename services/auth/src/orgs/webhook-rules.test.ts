import { describe, expect, it } from "vitest";
import { DEFAULT_PLANS } from "@renderbus/plans";
import { checkWebhookChange } from "./webhook-rules.js";

describe("webhook change rules", () => {
  const starter = DEFAULT_PLANS.starter;

  it("refuses webhooks on the free plan with PLAN_LIMIT", () => {
    expect(checkWebhookChange({ plan: DEFAULT_PLANS.free, mode: "development", webhookUrl: "https://example.com/h", webhookSecret: "s" })?.code).toBe("PLAN_LIMIT");
  });

  it("allows http in development and refuses it in production", () => {
    expect(checkWebhookChange({ plan: starter, mode: "development", webhookUrl: "http://127.0.0.1:9/h", webhookSecret: "s" })).toBeUndefined();
    const error = checkWebhookChange({ plan: starter, mode: "production", webhookUrl: "http://example.com/h", webhookSecret: "s" });
    expect(error?.code).toBe("VALIDATION_ERROR");
    expect(error?.message).toContain("webhookUrl");
    expect(checkWebhookChange({ plan: starter, mode: "production", webhookUrl: "https://example.com/h", webhookSecret: "s" })).toBeUndefined();
  });

  it("names the field when the URL or secret is malformed", () => {
    expect(checkWebhookChange({ plan: starter, mode: "test", webhookUrl: "not a url" })?.message).toContain("webhookUrl");
    expect(checkWebhookChange({ plan: starter, mode: "test", webhookUrl: "ftp://example.com" })?.message).toContain("webhookUrl");
    expect(checkWebhookChange({ plan: starter, mode: "test", webhookSecret: "" })?.message).toContain("webhookSecret");
  });
});
