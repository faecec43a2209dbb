import { describe, expect, it } from "vitest";
import { authBudgetsOf, type AuthAttempt } from "./auth-abuse-limits.js";

const config = {
  AUTH_SIGN_IN_PER_ACCOUNT_LIMIT: 5,
  AUTH_SIGN_IN_PER_ACCOUNT_ALL_IPS_LIMIT: 100,
  AUTH_SIGN_IN_PER_IP_LIMIT: 50,
  AUTH_SIGN_UP_PER_IP_LIMIT: 20,
  AUTH_CLIENT_REGISTRATION_PER_IP_LIMIT: 20,
  AUTH_PASSWORD_RESET_PER_IP_LIMIT: 5,
  AUTH_VERIFICATION_EMAIL_PER_IP_LIMIT: 5,
};

const attempt = (overrides: Partial<AuthAttempt>): AuthAttempt => ({
  method: "POST",
  pathname: "/auth/sign-in/email",
  contentType: "application/json",
  body: Buffer.from(JSON.stringify({ email: "ada@example.com", password: "x" })),
  ip: "192.0.2.1",
  ...overrides,
});
const names = (value: AuthAttempt) => authBudgetsOf(value, config).map((budget) => budget.name);
const subjects = (value: AuthAttempt) => authBudgetsOf(value, config).map((budget) => budget.subject);

describe("which /auth requests spend which abuse budget", () => {
  it("charges an email sign-in to its account and its client IP", () => {
    expect(names(attempt({}))).toEqual(["sign-in-account-ip", "sign-in-account", "sign-in-ip"]);
    expect(authBudgetsOf(attempt({}), config)[0]).toMatchObject({ limit: 5, refundOnSuccess: true });
    expect(authBudgetsOf(attempt({}), config)[1]).toMatchObject({ limit: 100, refundOnSuccess: true });
    expect(subjects(attempt({})).join(" ")).not.toContain("ada@example.com");
  });

  it("locks an account per client IP, so another address's guesses do not lock its owner out (only the looser all-IPs budget is shared)", () => {
    const [here, there] = [authBudgetsOf(attempt({}), config), authBudgetsOf(attempt({ ip: "198.51.100.7" }), config)];
    expect(here[0]!.subject).not.toBe(there[0]!.subject);
    expect(here[1]!.subject).toBe(there[1]!.subject);
    expect(here[2]!.subject).not.toBe(there[2]!.subject);
  });

  it("counts one account however its address or the path is spelled", () => {
    const reference = subjects(attempt({}));
    for (const variant of [
      attempt({ body: Buffer.from(JSON.stringify({ email: " ADA@Example.com ", password: "y" })) }),
      attempt({ pathname: "/auth/sign-in/email/" }),
      attempt({ pathname: "/auth//sign-in//email" }),
      attempt({ pathname: "/auth/Sign-In/%65mail" }),
      attempt({ contentType: "application/merge-patch+json; charset=utf-8" }),
      attempt({ contentType: "application/x-www-form-urlencoded", body: Buffer.from("email=someone%40else&email=ada%40example.com&password=x") }),
    ]) {
      expect(subjects(variant)).toEqual(reference);
    }
  });

  it("refuses a multipart sign-in whose account it cannot read", () => {
    expect(() => authBudgetsOf(attempt({ contentType: "multipart/form-data; boundary=x" }), config)).toThrow(expect.objectContaining({ code: "VALIDATION_ERROR" }));
  });

  it("charges the OAuth sign-in page like a sign-in, and a sign-up there to the sign-up budget as well", () => {
    const form = (fields: Record<string, string>) => attempt({ pathname: "/auth/oauth/sign-in", contentType: "application/x-www-form-urlencoded", body: Buffer.from(new URLSearchParams(fields).toString()) });
    expect(names(form({ mode: "sign-in", email: "ada@example.com", password: "x" }))).toEqual(["sign-in-account-ip", "sign-in-account", "sign-in-ip"]);
    expect(subjects(form({ mode: "sign-in", email: "ada@example.com", password: "x" }))).toEqual(subjects(attempt({})));
    expect(names(form({ mode: "sign-up", email: "new@example.com", password: "x" }))).toEqual(["sign-in-account-ip", "sign-in-account", "sign-in-ip", "sign-up-ip"]);
  });

  it("charges sign-ups, client registrations, password requests and confirmation emails to the client IP", () => {
    expect(names(attempt({ pathname: "/auth/sign-up/email" }))).toEqual(["sign-up-ip"]);
    expect(names(attempt({ pathname: "/auth/oauth2/register" }))).toEqual(["client-registration-ip"]);
    for (const pathname of ["/auth/request-password-reset", "/auth/reset-password", "/auth/forget-password", "/auth/change-password"]) {
      expect(names(attempt({ pathname }))).toEqual(["password-reset-ip"]);
    }
    expect(names(attempt({ pathname: "/auth/send-verification-email" }))).toEqual(["verification-email-ip"]);
    expect(names(attempt({ pathname: "/auth/sign-in/social" }))).toEqual(["sign-in-ip"]);
  });

  it("charges nothing for reads and other routes", () => {
    expect(names(attempt({ method: "GET" }))).toEqual([]);
    expect(names(attempt({ method: "GET", pathname: "/auth/get-session" }))).toEqual([]);
    expect(names(attempt({ pathname: "/auth/sign-out" }))).toEqual([]);
  });

  it("counts an IPv6 client by its /64 and an IPv4-mapped one as IPv4", () => {
    const ipOf = (ip: string) => subjects(attempt({ pathname: "/auth/sign-up/email", ip }))[0];
    expect(ipOf("2001:db8:1:2::1")).toBe(ipOf("2001:db8:1:2:ffff:ffff:ffff:ffff"));
    expect(ipOf("2001:db8:1:2::1")).not.toBe(ipOf("2001:db8:1:3::1"));
    expect(ipOf("::ffff:192.0.2.1")).toBe(ipOf("192.0.2.1"));
  });
});
