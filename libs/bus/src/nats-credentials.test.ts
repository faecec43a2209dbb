import { describe, expect, it } from "vitest";
import { MissingNatsCredentialsError, natsConnectionOptions, natsCredentialsFromEnv, splitNatsUrl } from "./nats-credentials.js";

describe("NATS credentials", () => {
  it("refuses to connect without credentials in production, and allows it in development", () => {
    expect(() => natsConnectionOptions("nats://nats:4222", {}, true)).toThrow(MissingNatsCredentialsError);
    expect(natsConnectionOptions("nats://127.0.0.1:4222", {}, false)).toEqual({});
  });

  it("refuses a placeholder-length password in production", () => {
    expect(() => natsConnectionOptions("nats://nats:4222", { user: "worker", password: "REPLACE_ME" }, true)).toThrow(/at least 16 characters/);
    expect(natsConnectionOptions("nats://nats:4222", { user: "worker", password: "x".repeat(32) }, true)).toMatchObject({ user: "worker" });
  });

  it("gives a user its own inbox prefix, the only reply subjects its permissions allow", () => {
    expect(natsConnectionOptions("nats://nats:4222", { user: "gateway", password: "pw" }, false)).toEqual({ user: "gateway", pass: "pw", inboxPrefix: "_INBOX_gateway" });
  });

  it("insists on TLS for a tls:// URL or when TLS files are given", () => {
    expect(natsConnectionOptions("tls://nats:4222", {}, false)).toEqual({ tls: {} });
    const fromEnv = natsCredentialsFromEnv({ NATS_USER: "jobs", NATS_PASSWORD: "pw", NATS_TLS_CA: "/etc/nats/ca.pem" });
    expect(natsConnectionOptions("nats://nats:4222", fromEnv, false)).toMatchObject({ user: "jobs", tls: { caFile: "/etc/nats/ca.pem" } });
  });

  it("takes a user and password out of a nats://user:password@host URL", () => {
    expect(splitNatsUrl("nats://renderbus-dev:s3cr%40t@127.0.0.1:4223")).toEqual({ url: "nats://127.0.0.1:4223", credentials: { user: "renderbus-dev", password: "s3cr@t" } });
    expect(splitNatsUrl("nats://127.0.0.1:4222")).toEqual({ url: "nats://127.0.0.1:4222" });
  });
});
