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

  it("requires a signing secret with the first URL, and lets the URL change alone once one is stored", () => {
    const error = checkWebhookChange({ plan: starter, mode: "test", webhookUrl: "https://example.com/h" });
    expect(error?.code).toBe("VALIDATION_ERROR");
    expect(error?.message).toContain("webhookSecret");
    expect(checkWebhookChange({ plan: starter, mode: "test", webhookUrl: "https://example.com/h", secretSet: true })).toBeUndefined();
    expect(checkWebhookChange({ plan: starter, mode: "test", webhookUrl: "" })).toBeUndefined();
  });

  it("names the field when the URL or secret is malformed", () => {
    expect(checkWebhookChange({ plan: starter, mode: "test", webhookUrl: "not a url", secretSet: true })?.message).toContain("webhookUrl");
    expect(checkWebhookChange({ plan: starter, mode: "test", webhookUrl: "ftp://example.com", secretSet: true })?.message).toContain("webhookUrl");
    expect(checkWebhookChange({ plan: starter, mode: "test", webhookSecret: "" })?.message).toContain("webhookSecret");
  });
});
