import { describe, expect, it } from "vitest";
import { cookieValueOf, csrfCookie, csrfTokenFor, csrfTokenMatches } from "./csrf-token.js";
import { clientSubjectOf } from "./client-address.js";

describe("dashboard CSRF tokens", () => {
  it("binds the token to the session and the secret", () => {
    const token = csrfTokenFor("secret-one-0123456789", "session-a.sig");
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(csrfTokenFor("secret-one-0123456789", "session-a.sig")).toBe(token);
    expect(csrfTokenFor("secret-one-0123456789", "session-b.sig")).not.toBe(token);
    expect(csrfTokenFor("secret-two-0123456789", "session-a.sig")).not.toBe(token);
  });

  it("accepts exactly the expected token", () => {
    const token = csrfTokenFor("secret-one-0123456789", "s");
    expect(csrfTokenMatches(token, token)).toBe(true);
    for (const presented of [undefined, "", token.slice(1), `${token}x`, [token, token], token.toUpperCase()]) {
      expect(csrfTokenMatches(token, presented)).toBe(false);
    }
  });

  it("reads one cookie out of a Cookie header and makes a script-readable, strict cookie", () => {
    expect(cookieValueOf("a=1; rb_session=abc.def; rb_csrf=tok", "rb_session")).toBe("abc.def");
    expect(cookieValueOf("xrb_session=1", "rb_session")).toBeUndefined();
    expect(cookieValueOf(undefined, "rb_csrf")).toBeUndefined();
    expect(csrfCookie("tok", true)).toBe("rb_csrf=tok; Path=/; Max-Age=2592000; SameSite=Strict; Secure");
    expect(csrfCookie("tok", false)).not.toContain("HttpOnly");
  });
});

describe("client subjects of the per-IP limit", () => {
  it("counts IPv4 per address and IPv6 per /64", () => {
    expect(clientSubjectOf("203.0.113.9")).toBe("203.0.113.9");
    expect(clientSubjectOf("::ffff:203.0.113.9")).toBe("203.0.113.9");
    expect(clientSubjectOf("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64");
    expect(clientSubjectOf("2001:db8:1:2:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64");
    expect(clientSubjectOf("2001:0db8::1")).toBe("2001:db8:0:0::/64");
    expect(clientSubjectOf("::1")).toBe("0:0:0:0::/64");
    expect(clientSubjectOf("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
  });
});
