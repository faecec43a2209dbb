import { describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { checkEndpointFields, endpointMatches, generateEndpointSecret } from "./endpoint-rules.js";

describe("endpoint fields", () => {
  it("takes the org webhookUrl's URL rule: http(s), https in production, no credentials", () => {
    expect(checkEndpointFields({ url: "https://hooks.example.com/a" }, "production")).toBeUndefined();
    expect(checkEndpointFields({ url: "http://hooks.example.com/a" }, "production")?.message).toBe("url must use https in production");
    expect(checkEndpointFields({ url: "http://hooks.example.com/a" }, "development")).toBeUndefined();
    expect(checkEndpointFields({ url: "https://user:pw@hooks.example.com/a" }, "development")?.message).toBe("url must not contain credentials");
    expect(checkEndpointFields({ url: "gopher://hooks.example.com" }, "development")?.code).toBe("VALIDATION_ERROR");
  });

  it('accepts event names or "*" (with endpoint.disabled beside it), nothing else', () => {
    expect(checkEndpointFields({ events: ["*"] }, "test")).toBeUndefined();
    expect(checkEndpointFields({ events: ["*", "endpoint.disabled"] }, "test")).toBeUndefined();
    expect(checkEndpointFields({ events: ["job.failed", "job.completed"] }, "test")).toBeUndefined();
    expect(checkEndpointFields({ events: [] }, "test")?.code).toBe("VALIDATION_ERROR");
    expect(checkEndpointFields({ events: ["*", "job.failed"] }, "test")?.code).toBe("VALIDATION_ERROR");
    expect(checkEndpointFields({ events: ["job.failed", "job.failed"] }, "test")?.code).toBe("VALIDATION_ERROR");
    expect(checkEndpointFields({ events: ["webhook.test"] }, "test")?.code).toBe("VALIDATION_ERROR");
  });

  it("keeps job.progress opt-in: named alone or beside \"*\", never covered by it", () => {
    expect(checkEndpointFields({ events: ["job.progress"] }, "test")).toBeUndefined();
    expect(checkEndpointFields({ events: ["*", "job.progress", "endpoint.disabled"] }, "test")).toBeUndefined();
    expect(endpointMatches(["*"], "job.progress")).toBe(false);
    expect(endpointMatches(["*", "job.progress"], "job.progress")).toBe(true);
    expect(endpointMatches(["job.progress"], "job.completed")).toBe(false);
  });

  it("bounds the other settings", () => {
    expect(checkEndpointFields({ ordering: "fifo", retrySchedule: "extended", rateLimitPerSecond: 50 }, "test")).toBeUndefined();
    expect(checkEndpointFields({ rateLimitPerSecond: 0 }, "test")?.code).toBe("VALIDATION_ERROR");
    expect(checkEndpointFields({ rateLimitPerSecond: 1.5 }, "test")?.code).toBe("VALIDATION_ERROR");
    expect(checkEndpointFields({ description: "x".repeat(501) }, "test")?.code).toBe("VALIDATION_ERROR");
    expect(checkEndpointFields({ secret: "short" }, "test")?.code).toBe("VALIDATION_ERROR");
  });

  it("generates whsec_ secrets the standardwebhooks package accepts", () => {
    const secret = generateEndpointSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(() => new Webhook(secret)).not.toThrow();
    expect(generateEndpointSecret()).not.toBe(secret);
  });
});
