import { describe, expect, it } from "vitest";
import { serviceKeyringOf, SERVICE_NAMES, type ServiceName } from "@renderbus/rpc";
import { serviceKeyLines } from "./service-keys.js";

describe("npm run service-keys", () => {
  it("prints one line per service that the service accepts in production, holding no other service's private key", () => {
    const lines = serviceKeyLines("2027-01");
    expect(lines.map((line) => line.split("=")[0])).toEqual(["GATEWAY_SERVICE_TOKEN_KEYS", "AUTH_SERVICE_TOKEN_KEYS", "JOBS_SERVICE_TOKEN_KEYS", "WEBHOOK_DISPATCHER_SERVICE_TOKEN_KEYS", "WORKER_SERVICE_TOKEN_KEYS"]);
    lines.forEach((line, index) => {
      const service: ServiceName = SERVICE_NAMES[index]!;
      const value = /^[A-Z_]+='(.*)'$/.exec(line)![1]!;
      expect(value.split(",").filter((entry) => entry.includes(":private:"))).toEqual([expect.stringMatching(new RegExp(`^${service}:2027-01:private:`))]);
      expect(() => serviceKeyringOf(service, { MODE: "production", SERVICE_TOKEN_KEYS: value })).not.toThrow();
    });
  });
});
