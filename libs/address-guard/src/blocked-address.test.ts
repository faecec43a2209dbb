import { describe, expect, it } from "vitest";
import { createGuardedLookup, embeddedIpv4Addresses, isBlockedAddress, refuseBlockedLiteral } from "./index.js";
import { BlockedAddressError } from "./blocked-address-error.js";

/** The one table of what job inputs and webhooks may reach (both services use this library). */
describe("isBlockedAddress", () => {
  it.each([
    // IPv4
    ["0.0.0.0", "this network"],
    ["127.0.0.1", "loopback"],
    ["127.1.2.3", "loopback"],
    ["10.0.0.5", "private"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["100.64.0.1", "shared (CGNAT)"],
    ["100.100.100.200", "Alibaba metadata"],
    ["169.254.169.254", "link-local metadata"],
    ["192.0.0.170", "IETF protocol assignments"],
    ["192.0.2.1", "documentation"],
    ["192.88.99.1", "6to4 relay anycast"],
    ["198.18.0.1", "benchmarking"],
    ["198.51.100.7", "documentation"],
    ["203.0.113.9", "documentation"],
    ["224.0.0.1", "multicast"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "broadcast"],
    // IPv6
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["[::1]", "loopback in brackets"],
    ["fe80::1%eth0", "link-local with a zone"],
    ["fe80::1", "link-local"],
    ["fec0::1", "site-local"],
    ["fd00:ec2::254", "AWS metadata (unique local)"],
    ["fc00::1", "unique local"],
    ["ff02::1", "multicast"],
    ["100::1", "discard-only"],
    ["2001:db8::1", "documentation"],
    ["2001:2::1", "benchmarking"],
    ["3fff::1", "documentation"],
    ["::7f00:1", "IPv4-compatible"],
    ["64:ff9b:1::a00:1", "local-use NAT64"],
    ["64:ff9b:1::808:808", "local-use NAT64 (not decodable)"],
    // IPv4 carried in IPv6
    ["::ffff:127.0.0.1", "IPv4-mapped loopback"],
    ["::ffff:7f00:1", "IPv4-mapped loopback (hex)"],
    ["[::ffff:a9fe:a9fe]", "IPv4-mapped metadata"],
    ["::ffff:169.254.169.254", "IPv4-mapped metadata"],
    ["::ffff:192.88.99.1", "IPv4-mapped 6to4 relay"],
    ["::ffff:0:10.0.0.1", "IPv4-translated private"],
    ["64:ff9b::7f00:1", "NAT64 loopback"],
    ["64:ff9b::169.254.169.254", "NAT64 metadata"],
    ["2002:7f00:1::1", "6to4 of loopback"],
    ["2002:a9fe:a9fe::", "6to4 of metadata"],
    ["2002:c0a8:101:1::1", "6to4 of 192.168.1.1"],
    ["2001:0:7f00:1::8.8.8.8", "Teredo with a loopback server"],
    ["2001:0:808:808:0:0:f5ff:fffe", "Teredo with client 10.0.0.1"],
    ["2001:0:808:808::5601:5601", "Teredo with client 169.254.169.254"],
    // Not an IP literal: fail closed
    ["not-an-ip", "a name"],
    ["localhost", "a name"],
    ["0177.0.0.1", "octal form"],
    ["", "empty"],
  ])("refuses %s (%s)", (address) => {
    expect(isBlockedAddress(address)).toBe(true);
  });

  it.each([
    "93.184.216.34",
    "8.8.8.8",
    "1.1.1.1",
    "172.32.0.1",
    "192.89.0.1",
    "2606:4700:4700::1111",
    "2a00:1450:4001::200e",
    "::ffff:8.8.8.8",
    "64:ff9b::8.8.8.8",
    "2002:808:808::1",
    "2001:0:808:808:0:0:f7f7:f7f7",
  ])("allows public address %s", (address) => {
    expect(isBlockedAddress(address)).toBe(false);
  });
});

describe("embeddedIpv4Addresses", () => {
  it.each([
    ["::ffff:1.2.3.4", ["1.2.3.4"]],
    ["::ffff:0:1.2.3.4", ["1.2.3.4"]],
    ["64:ff9b::102:304", ["1.2.3.4"]],
    ["2002:102:304::", ["1.2.3.4"]],
    ["2001:0:102:304:0:0:f7f7:f7f7", ["1.2.3.4", "8.8.8.8"]],
    ["2606:4700::1", []],
  ])("decodes %s", (address, expected) => {
    expect(embeddedIpv4Addresses(address)).toEqual(expected);
  });
});

describe("connect-time checks", () => {
  it("refuses a blocked IP literal and lets names and public literals through to the lookup", () => {
    expect(refuseBlockedLiteral("[::1]")).toBeInstanceOf(BlockedAddressError);
    expect(refuseBlockedLiteral("127.0.0.1")?.message).toBe("refused to connect to a private, loopback or link-local address (127.0.0.1)");
    expect(refuseBlockedLiteral("8.8.8.8")).toBeUndefined();
    expect(refuseBlockedLiteral("example.com")).toBeUndefined();
  });

  it("fails a lookup whose answers include a blocked address, naming it", async () => {
    const lookup = createGuardedLookup();
    const error = await new Promise<unknown>((resolve) => lookup("localhost", {}, (failure) => resolve(failure)));
    expect(error).toBeInstanceOf(BlockedAddressError);
    expect((error as BlockedAddressError).host).toBe("localhost");
    expect(isBlockedAddress((error as BlockedAddressError).address)).toBe(true);
  });

  it("uses the given policy instead of the default", async () => {
    const lookup = createGuardedLookup(() => false);
    const address = await new Promise<unknown>((resolve) => lookup("localhost", {}, (_error, found) => resolve(found)));
    expect(address).toMatch(/^(127\.0\.0\.1|::1)$/);
  });

  it("refuses a blocked IP literal handed to the lookup and hands a public one back as it is", async () => {
    const lookup = createGuardedLookup();
    const answerOf = (host: string) => new Promise<unknown[]>((resolve) => lookup(host, {}, (...answer) => resolve(answer)));
    expect((await answerOf("127.0.0.1"))[0]).toMatchObject({ name: "BlockedAddressError", address: "127.0.0.1" });
    expect((await answerOf("::1"))[0]).toMatchObject({ name: "BlockedAddressError", address: "::1" });
    expect(await answerOf("93.184.216.34")).toEqual([null, "93.184.216.34", 4]);
  });
});
