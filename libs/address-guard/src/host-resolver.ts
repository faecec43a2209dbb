import dns, { type LookupAddress } from "node:dns";
import { isIP } from "node:net";
import { createHostsFile } from "./hosts-file.js";

/**
 * How long resolving one host name may take in all (A and AAAA together), whatever resolv.conf lists (several
 * servers, search domains): past it the lookup fails with ETIMEOUT and the connection with it.
 */
export const DNS_TIMEOUT_MS = 5_000;

/** Resolves host names for the connect step (see {@link createHostResolver}). */
export interface HostResolver {
  /**
   * Every address of `hostname`, IPv4 first, only of `family` when it is 4 or 6. Rejects with ENOTFOUND when the
   * name has none, ETIMEOUT when DNS did not answer within the timeout, or another c-ares code (ESERVFAIL, ...).
   */
  resolve(hostname: string, family?: number): Promise<LookupAddress[]>;
}

export interface HostResolverOptions {
  /** DNS servers (`"127.0.0.1:5353"`) instead of resolv.conf's: tests point this at a stub server. */
  servers?: string[];
  /** The overall bound of one lookup; {@link DNS_TIMEOUT_MS} by default. */
  timeoutMs?: number;
  /** The hosts file; /etc/hosts by default. */
  hostsFile?: string;
}

const dnsError = (code: string, message: string, hostname: string) => Object.assign(new Error(message), { code, hostname });

/**
 * Host names resolved without libuv's thread pool. `dns.lookup` (getaddrinfo) blocks one of its 4 threads per lookup
 * for as long as DNS takes (10-40 s against a server that never answers), so one tenant's names under a silent DNS
 * server stalled every other tenant's new connections and the process's file I/O. Here names in the hosts file
 * (`localhost`, names Docker or Kubernetes add) are answered from it, as getaddrinfo's "files dns" order does, and every
 * other name is asked of DNS through c-ares (A and AAAA in parallel), which waits on sockets, not threads, within
 * `timeoutMs` (c-ares does not apply resolv.conf's `search` domains: short names need their full form). The hosts file is read first rather than as a fallback after c-ares answers ENOTFOUND: a fallback
 * through getaddrinfo would let a DNS server that answers NXDOMAIN once and then stays silent hold threads again.
 */
export function createHostResolver(options: HostResolverOptions = {}): HostResolver {
  const timeoutMs = options.timeoutMs ?? DNS_TIMEOUT_MS;
  // Two tries, so that one lost datagram does not fail a lookup; the deadline below bounds the whole.
  const resolver = new dns.promises.Resolver({ timeout: Math.ceil(timeoutMs / 2), tries: 2 });
  if (options.servers) resolver.setServers(options.servers);
  const hostsFile = createHostsFile(options.hostsFile);

  const askDns = async (hostname: string, family: number): Promise<LookupAddress[]> => {
    const timedOut = () => dnsError("ETIMEOUT", `DNS lookup of ${hostname} timed out after ${timeoutMs} ms`, hostname);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(timedOut()), timeoutMs)));
    const within = <T>(query: Promise<T>) => Promise.race([query, deadline]);
    const families = family === 4 || family === 6 ? [family] : [4, 6];
    try {
      const results = await Promise.allSettled(
        families.map(async (version) => (await within(version === 4 ? resolver.resolve4(hostname) : resolver.resolve6(hostname))).map((address) => ({ address, family: version }))),
      );
      const addresses = results.flatMap((result) => (result.status === "fulfilled" ? result.value : []));
      if (addresses.length > 0) return addresses;
      const failures = results.map((result) => (result as PromiseRejectedResult).reason as NodeJS.ErrnoException);
      if (failures.some((failure) => failure.code === "ETIMEOUT")) throw timedOut();
      throw failures.find((failure) => failure.code !== "ENOTFOUND" && failure.code !== "ENODATA") ?? dnsError("ENOTFOUND", `no address for ${hostname}`, hostname);
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    async resolve(hostname, family = 0) {
      const ipFamily = isIP(hostname);
      if (ipFamily !== 0) return [{ address: hostname, family: ipFamily }];
      const fromFile = (await hostsFile.addresses(hostname)).filter((entry) => family === 0 || entry.family === family);
      if (fromFile.length > 0) return fromFile;
      return askDns(hostname, family);
    },
  };
}

/** The process's resolver: resolv.conf's servers, /etc/hosts, {@link DNS_TIMEOUT_MS}. */
export const systemHostResolver: HostResolver = createHostResolver();
