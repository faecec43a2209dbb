import { BlockList, isIP } from "node:net";

/** Whether an IP address must not be connected to (tests swap in one that exempts their own server). */
export type AddressPolicy = (address: string) => boolean;

/**
 * IPv4 ranges no job input or webhook may reach: "this network", private (RFC 1918), shared/CGNAT (which holds
 * Alibaba's metadata endpoint), loopback, link-local (169.254.169.254 and other cloud metadata endpoints), IETF
 * protocol assignments, documentation, the 6to4 relay anycast, benchmarking, multicast, reserved and broadcast.
 */
const IPV4_RANGES = [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12],
  ["192.0.0.0", 24], ["192.0.2.0", 24], ["192.88.99.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15],
  ["198.51.100.0", 24], ["203.0.113.0", 24], ["224.0.0.0", 4], ["240.0.0.0", 4],
] as const;

/**
 * IPv6 ranges refused as a whole: unspecified, loopback, IPv4-compatible (deprecated), the local-use NAT64 prefix
 * (its IPv4 position depends on the operator's prefix length, so it cannot be decoded), discard-only, benchmarking,
 * documentation, unique local (incl. fd00:ec2::254, the AWS metadata endpoint), link-local, site-local and
 * multicast. IPv4-mapped, IPv4-translated, 6to4, Teredo and well-known NAT64 addresses are judged by the IPv4 they
 * carry ({@link embeddedIpv4Addresses}).
 */
const IPV6_RANGES = [
  ["::", 128], ["::1", 128], ["::", 96], ["64:ff9b:1::", 48], ["100::", 64], ["2001:2::", 48], ["2001:db8::", 32],
  ["3fff::", 20], ["fc00::", 7], ["fe80::", 10], ["fec0::", 10], ["ff00::", 8],
] as const;

const blockList = new BlockList();
for (const [network, prefix] of IPV4_RANGES) blockList.addSubnet(network, prefix, "ipv4");
for (const [network, prefix] of IPV6_RANGES) blockList.addSubnet(network, prefix, "ipv6");

/** The eight 16-bit groups of a valid IPv6 literal (`isIP(address) === 6`), a dotted IPv4 tail included. */
function groupsOf(address: string): number[] {
  let text = address.toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split(".").map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const headGroups = head === "" ? [] : head.split(":");
  const tailGroups = tail === undefined || tail === "" ? [] : tail.split(":");
  const zeros = tail === undefined ? [] : new Array<string>(8 - headGroups.length - tailGroups.length).fill("0");
  return [...headGroups, ...zeros, ...tailGroups].map((group) => parseInt(group, 16));
}

const ipv4Of = (high: number, low: number): string => [high >> 8, high & 255, low >> 8, low & 255].join(".");

/**
 * The IPv4 addresses an IPv6 address hands traffic to: IPv4-mapped `::ffff:0:0/96`, IPv4-translated
 * `::ffff:0:0:0/96`, well-known NAT64 `64:ff9b::/96` (last 32 bits), 6to4 `2002::/16` (bits 16-47) and Teredo
 * `2001::/32` (server in bits 32-63, client obfuscated in bits 96-127). Empty for any other address.
 */
export function embeddedIpv4Addresses(ipv6: string): string[] {
  const g = groupsOf(ipv6);
  const zeroUpTo = (count: number) => g.slice(0, count).every((group) => group === 0);
  if (zeroUpTo(5) && g[5] === 0xffff) return [ipv4Of(g[6]!, g[7]!)];
  if (zeroUpTo(4) && g[4] === 0xffff && g[5] === 0) return [ipv4Of(g[6]!, g[7]!)];
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((group) => group === 0)) return [ipv4Of(g[6]!, g[7]!)];
  if (g[0] === 0x2002) return [ipv4Of(g[1]!, g[2]!)];
  if (g[0] === 0x2001 && g[1] === 0) return [ipv4Of(g[2]!, g[3]!), ipv4Of(g[6]! ^ 0xffff, g[7]! ^ 0xffff)];
  return [];
}

/**
 * Whether an address (IPv4 or IPv6, brackets and zone id allowed) is one job inputs and webhooks must not connect
 * to. Anything that is not an IP literal is refused too, so a caller that forgot to resolve a name fails closed.
 */
export function isBlockedAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const family = isIP(bare);
  if (family === 0) return true;
  if (family === 4) return blockList.check(bare, "ipv4");
  if (embeddedIpv4Addresses(bare).some((ipv4) => blockList.check(ipv4, "ipv4"))) return true;
  return blockList.check(bare, "ipv6");
}
