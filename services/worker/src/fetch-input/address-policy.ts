import { BlockList, isIP } from "node:net";

/**
 * Addresses an input URL must never reach in production: loopback, private (RFC 1918, unique local), link-local
 * (which holds cloud metadata endpoints such as 169.254.169.254), carrier-grade NAT (Alibaba's metadata endpoint),
 * unspecified, multicast, reserved, and NAT64 prefixes that can wrap any of those. IPv4-mapped IPv6 addresses
 * (`::ffff:127.0.0.1`) match the IPv4 rules because BlockList compares them as IPv4.
 */
const forbidden = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12],
  ["192.0.0.0", 24], ["192.0.2.0", 24], ["192.88.99.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15],
  ["198.51.100.0", 24], ["203.0.113.0", 24], ["224.0.0.0", 4], ["240.0.0.0", 4],
] as const) {
  forbidden.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [
  ["::", 128], ["::1", 128], ["64:ff9b::", 96], ["64:ff9b:1::", 48], ["100::", 64], ["2001:db8::", 32],
  ["fc00::", 7], ["fe80::", 10], ["fec0::", 10], ["ff00::", 8],
] as const) {
  forbidden.addSubnet(network, prefix, "ipv6");
}

function mappedIpv4(address: string): string | undefined {
  // `::ffff:7f00:1` and `::ffff:127.0.0.1` both name 127.0.0.1.
  const match = /^::ffff:(?:0:)?(.+)$/i.exec(address);
  if (!match) return undefined;
  const tail = match[1]!;
  if (isIP(tail) === 4) return tail;
  const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(tail);
  if (!hex) return undefined;
  const high = parseInt(hex[1]!, 16);
  const low = parseInt(hex[2]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join(".");
}

/** Whether an IP address (v4 or v6, brackets allowed) is one an input fetch must not connect to in production. */
export function isForbiddenAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const family = isIP(bare);
  if (family === 0) return true;
  if (family === 4) return forbidden.check(bare, "ipv4");
  const mapped = mappedIpv4(bare);
  if (mapped) return forbidden.check(mapped, "ipv4");
  return forbidden.check(bare, "ipv6");
}
