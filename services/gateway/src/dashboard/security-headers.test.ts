import { describe, expect, it } from "vitest";
import { dashboardSecurityHeaders } from "./security-headers.js";

describe("dashboard security headers", () => {
  const headers = dashboardSecurityHeaders("https://renderbus.example.com/some/path");

  it("forbids framing both ways (CSP frame-ancestors and X-Frame-Options)", () => {
    expect(headers["Content-Security-Policy"]).toContain("frame-ancestors 'none'");
    expect(headers["X-Frame-Options"]).toBe("DENY");
  });

  it("allows scripts, styles and API calls from this origin only", () => {
    const csp = headers["Content-Security-Policy"]!;
    expect(csp).toMatch(/^default-src 'self'/);
    expect(csp).toContain("script-src 'self';");
    expect(csp).toContain("connect-src 'self';");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("unsafe-eval");
  });

  it("lets result previews load from the public origin", () => {
    expect(headers["Content-Security-Policy"]).toContain("img-src 'self' https://renderbus.example.com data: blob:");
    expect(headers["Content-Security-Policy"]).toContain("media-src 'self' https://renderbus.example.com blob:");
  });

  it("lets previews follow a redirect to the object store's origin when downloads redirect there", () => {
    const csp = dashboardSecurityHeaders("https://renderbus.example.com", ["https://renderbus-outputs.s3.us-east-1.amazonaws.com"])["Content-Security-Policy"]!;
    expect(csp).toContain("img-src 'self' https://renderbus.example.com https://renderbus-outputs.s3.us-east-1.amazonaws.com data: blob:");
    expect(csp).toContain("media-src 'self' https://renderbus.example.com https://renderbus-outputs.s3.us-east-1.amazonaws.com blob:");
    expect(csp).toContain("connect-src 'self';");
  });

  it("sets nosniff and a referrer policy that keeps paths on this origin", () => {
    expect(headers["X-Content-Type-Options"]).toBe("nosniff");
    expect(headers["Referrer-Policy"]).toBe("strict-origin-when-cross-origin");
  });
});
