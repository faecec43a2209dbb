import { describe, expect, it } from "vitest";
import { isBlockedAddress } from "./address-guard.js";

describe("isBlockedAddress", () => {
  it.each(["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1", "::", "fe80::1", "fd00:ec2::254", "::ffff:127.0.0.1", "::ffff:169.254.169.254"])(
    "refuses %s",
    (address) => expect(isBlockedAddress(address)).toBe(true),
  );

  it.each(["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111"])("allows public %s", (address) => {
    expect(isBlockedAddress(address)).toBe(false);
  });
});
