import { describe, expect, it } from "vitest";
import { isForbiddenAddress } from "./address-policy.js";

describe("input address policy", () => {
  it.each([
    "127.0.0.1", "127.1.2.3", "10.0.0.5", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.100.100.200", "0.0.0.0",
    "::1", "[::1]", "::", "fe80::1", "fd00:ec2::254", "::ffff:127.0.0.1", "::ffff:7f00:1", "[::ffff:a9fe:a9fe]",
    "64:ff9b::7f00:1", "224.0.0.1", "not-an-ip",
  ])("refuses %s", (address) => {
    expect(isForbiddenAddress(address)).toBe(true);
  });

  it.each(["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"])("allows public address %s", (address) => {
    expect(isForbiddenAddress(address)).toBe(false);
  });
});
