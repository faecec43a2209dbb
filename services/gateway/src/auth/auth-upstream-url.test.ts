import { describe, expect, it } from "vitest";
import { authUpstreamUrl } from "./auth-upstream-url.js";

const AUTH = "http://127.0.0.1:50061";

describe("the auth proxy's upstream URL", () => {
  it("keeps the auth service's own paths and their query strings", () => {
    expect(authUpstreamUrl("/auth/sign-in/email", AUTH)?.href).toBe("http://127.0.0.1:50061/auth/sign-in/email");
    expect(authUpstreamUrl("/auth/oauth2/authorize?client_id=a&redirect_uri=http%3A%2F%2Flocalhost%2Fcb", AUTH)?.href).toBe(
      "http://127.0.0.1:50061/auth/oauth2/authorize?client_id=a&redirect_uri=http%3A%2F%2Flocalhost%2Fcb",
    );
    expect(authUpstreamUrl("/.well-known/oauth-authorization-server/auth", AUTH)?.href).toBe("http://127.0.0.1:50061/.well-known/oauth-authorization-server/auth");
  });

  it("sends the normalised path, when normalising keeps it under /auth/", () => {
    expect(authUpstreamUrl("/auth/x/../sign-in/email", AUTH)?.pathname).toBe("/auth/sign-in/email");
    expect(authUpstreamUrl("/auth/x/%2e%2e/get-session", AUTH)?.pathname).toBe("/auth/get-session");
  });

  it.each([
    "http://169.254.169.254/auth/../latest/meta-data/",
    "http://127.0.0.1:9999/auth/x",
    "//127.0.0.1:9999/auth/x",
    "/auth/../x",
    "/auth/%2e%2e/x",
    "/auth/%2E%2e/x",
    "/auth/.%2e/x",
    "/auth/..",
    "/.well-known/../x",
    "/.well-known/%2e%2e/auth/../x",
    "/auth/..%2f..%2fx",
    "/auth/..%2F..%2Fx",
    "/auth/..\\..\\x",
    "/auth/%5c..%5cx",
    "/auth/x%00",
    "/%61uth/x",
    "/x/../auth/x",
    "/healthz",
    "/auth",
    "",
  ])("refuses %s", (target) => {
    expect(authUpstreamUrl(target, AUTH)).toBeUndefined();
  });

  it("never leaves the auth service's origin, whatever the query holds", () => {
    const url = authUpstreamUrl("/auth/callback?next=http://evil.example/../x@evil.example", AUTH);
    expect(url?.origin).toBe("http://127.0.0.1:50061");
    expect(url?.pathname).toBe("/auth/callback");
  });
});
