import { mkdtemp, rm, writeFile } from "node:fs/promises";
import type { LookupAddress, LookupOptions } from "node:dns";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BlockedAddressError, createGuardedLookup, createHostLookup, createHostResolver, isBlockedAddress, type LookupFunction } from "./index.js";
import { startStubDnsServer, type StubDnsServer } from "./testing/stub-dns-server.js";

const TIMEOUT_MS = 1_000;

type Outcome = { error: NodeJS.ErrnoException | null; addresses: LookupAddress[]; elapsedMs: number };

/** One call of a connect-step `lookup`, as net.connect makes it with `all: true`. */
function lookupOf(lookup: LookupFunction, hostname: string, options: LookupOptions = { all: true }): Promise<Outcome> {
  const started = performance.now();
  return new Promise((resolve) =>
    lookup(hostname, options, (error, addresses) => resolve({ error, addresses: Array.isArray(addresses) ? addresses : [], elapsedMs: performance.now() - started })),
  );
}

/**
 * Names of two tenants on one DNS server: tenant A's zone never answers (or answers private addresses), tenant B's
 * answers at once. A lookup of a name must never wait behind another tenant's slow one (libuv's 4 getaddrinfo
 * threads were shared by all), and must fail by itself within the timeout.
 */
describe("host name resolution for the connect step", () => {
  let dns: StubDnsServer;
  let hostsDirectory: string;
  let resolver: ReturnType<typeof createHostResolver>;

  beforeAll(async () => {
    dns = await startStubDnsServer({
      "*.silent.tenant-a.test": "silent",
      "internal.tenant-a.test": { a: ["10.0.0.7"] },
      "mixed.tenant-a.test": { a: ["93.184.216.34", "169.254.169.254"] },
      "hooks.tenant-b.test": { a: ["93.184.216.34"] },
    });
    hostsDirectory = await mkdtemp(join(tmpdir(), "rb-hosts-"));
    await writeFile(join(hostsDirectory, "hosts"), "127.0.0.1 localhost\n# a comment\n10.1.2.3  build-cache.internal  cache # Docker's extra_hosts\n");
    resolver = createHostResolver({ servers: [dns.address], timeoutMs: TIMEOUT_MS, hostsFile: join(hostsDirectory, "hosts") });
  });

  afterAll(async () => {
    await dns?.close();
    if (hostsDirectory) await rm(hostsDirectory, { recursive: true, force: true });
  });

  it("fails a name whose DNS server never answers with ETIMEOUT within the timeout", async () => {
    const outcome = await lookupOf(createGuardedLookup(isBlockedAddress, resolver), "a1.silent.tenant-a.test");
    expect(outcome.error).toMatchObject({ code: "ETIMEOUT", message: `DNS lookup of a1.silent.tenant-a.test timed out after ${TIMEOUT_MS} ms` });
    expect(outcome.elapsedMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(outcome.elapsedMs).toBeLessThan(TIMEOUT_MS + 500);
  });

  it("resolves another tenant's name at once while 8 lookups of names under a silent DNS server are pending", async () => {
    const guarded = createGuardedLookup(isBlockedAddress, resolver);
    let silentSettled = 0;
    const silent = Array.from({ length: 8 }, (_, index) => lookupOf(guarded, `b${index}.silent.tenant-a.test`).finally(() => (silentSettled += 1)));
    const other = await lookupOf(guarded, "hooks.tenant-b.test");
    expect(other).toMatchObject({ error: null, addresses: [{ address: "93.184.216.34", family: 4 }] });
    expect(other.elapsedMs).toBeLessThan(TIMEOUT_MS / 4);
    expect(silentSettled).toBe(0);
    for (const outcome of await Promise.all(silent)) expect(outcome.error?.code).toBe("ETIMEOUT");
  });

  it.each([
    ["a private address", "internal.tenant-a.test", "10.0.0.7"],
    ["a public and a link-local address", "mixed.tenant-a.test", "169.254.169.254"],
  ])("refuses a name the DNS server answers with %s, naming the address", async (_label, hostname, refused) => {
    const outcome = await lookupOf(createGuardedLookup(isBlockedAddress, resolver), hostname);
    expect(outcome.error).toBeInstanceOf(BlockedAddressError);
    expect(outcome.error).toMatchObject({ host: hostname, address: refused });
  });

  it("fails a name DNS has no address for with ENOTFOUND instead of connecting", async () => {
    const outcome = await lookupOf(createGuardedLookup(isBlockedAddress, resolver), "nobody.tenant-b.test");
    expect(outcome).toMatchObject({ error: { code: "ENOTFOUND" }, addresses: [] });
  });

  it("answers names in the hosts file from it, without asking DNS", async () => {
    const unguarded = createHostLookup(resolver);
    expect(await lookupOf(unguarded, "build-cache.internal")).toMatchObject({ error: null, addresses: [{ address: "10.1.2.3", family: 4 }] });
    expect(await lookupOf(unguarded, "CACHE", {})).toMatchObject({ error: null });
    expect((await lookupOf(createGuardedLookup(isBlockedAddress, resolver), "localhost")).error).toBeInstanceOf(BlockedAddressError);
    expect(dns.queries.filter((name) => ["build-cache.internal", "cache", "localhost"].includes(name))).toEqual([]);
  });

  it("resolves through the same resolver and timeout without the guard (ALLOW_PRIVATE_ADDRESSES)", async () => {
    const unguarded = createHostLookup(resolver);
    expect(await lookupOf(unguarded, "internal.tenant-a.test", {})).toMatchObject({ error: null });
    expect(await lookupOf(unguarded, "internal.tenant-a.test")).toMatchObject({ addresses: [{ address: "10.0.0.7", family: 4 }] });
    expect((await lookupOf(unguarded, "c1.silent.tenant-a.test")).error?.code).toBe("ETIMEOUT");
    expect((await lookupOf(unguarded, "nobody.tenant-b.test")).error).toMatchObject({ code: "ENOTFOUND" });
  });

  it("hands the first address to a caller that does not ask for all of them, and IP literals back as they are", async () => {
    const answer = await new Promise<unknown[]>((resolve) => createHostLookup(resolver)("hooks.tenant-b.test", {}, (...args) => resolve(args)));
    expect(answer).toEqual([null, "93.184.216.34", 4]);
    expect(await lookupOf(createHostLookup(resolver), "10.0.0.7")).toMatchObject({ addresses: [{ address: "10.0.0.7", family: 4 }] });
    expect((await lookupOf(createGuardedLookup(isBlockedAddress, resolver), "10.0.0.7")).error).toBeInstanceOf(BlockedAddressError);
  });
});
