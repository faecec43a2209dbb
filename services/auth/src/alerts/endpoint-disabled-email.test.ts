import { describe, expect, it } from "vitest";
import { endpointDisabledEmail } from "./endpoint-disabled-email.js";

const disabled = { orgName: "Analytical Engines", endpointId: "ep_01", url: "https://hooks.example.com/renderbus", reason: "the receiver answered 410 Gone", disabledAt: Date.UTC(2026, 11, 1, 9, 30) };

describe("the endpoint-disabled email", () => {
  it("names the org, the endpoint, when and why, and links to the Webhooks page", () => {
    const email = endpointDisabledEmail("ada@example.com", disabled, "https://renderbus.example.com");
    expect(email.to).toBe("ada@example.com");
    expect(email.subject).toBe("Webhook endpoint disabled in Analytical Engines");
    expect(email.text).toContain('the organization "Analytical Engines" on Tue, 01 Dec 2026 09:30:00 GMT');
    expect(email.text).toContain("  https://hooks.example.com/renderbus\n  (ep_01)");
    expect(email.text).toContain("Why: the receiver answered 410 Gone.");
    expect(email.text).toContain("https://renderbus.example.com/app/settings/webhooks");
  });

  it("keeps what users typed (org name, URL) on one bounded line each", () => {
    const email = endpointDisabledEmail("ada@example.com", { ...disabled, orgName: "Evil\r\nBcc: victim@example.com\r\n\r\nClick http://phish.example", url: `https://a.example/${"x".repeat(600)}\n\nhello` }, "https://renderbus.example.com");
    expect(email.subject).toBe("Webhook endpoint disabled in Evil Bcc: victim@example.com Click http://phish.example");
    const urlLine = email.text.split("\n")[2]!;
    expect(urlLine).toHaveLength(2 + 500);
    expect(email.text.split("\n")).toHaveLength(endpointDisabledEmail("a@example.com", disabled, "https://renderbus.example.com").text.split("\n").length);
  });
});
