import { mkdtemp, readFile, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createHostsFile, type HostsFileReader } from "./hosts-file.js";

/** node:fs, counting what the hosts file asks of it; `failReads` makes the next reads fail as an unreadable file does. */
function countingReader() {
  const counts = { stats: 0, reads: 0, failReads: 0 };
  const reader: HostsFileReader = {
    stat: (path) => ((counts.stats += 1), stat(path)),
    readFile: async (path) => {
      counts.reads += 1;
      if (counts.failReads > 0) {
        counts.failReads -= 1;
        throw Object.assign(new Error(`EACCES: permission denied, open '${path}'`), { code: "EACCES" });
      }
      return readFile(path, "utf8");
    },
  };
  return { counts, reader };
}

describe("hosts file", () => {
  let directory: string;
  let path: string;

  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), "rb-hosts-file-"));
    path = join(directory, "hosts");
  });

  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it("reads the file once for any number of lookups while its stat is unchanged, stat-ing it on each", async () => {
    await writeFile(path, "10.1.2.3 build-cache.internal cache\n");
    const { counts, reader } = countingReader();
    const hostsFile = createHostsFile(path, reader);
    expect(await hostsFile.addresses("cache")).toEqual([{ address: "10.1.2.3", family: 4 }]);
    expect(await hostsFile.addresses("build-cache.internal")).toEqual([{ address: "10.1.2.3", family: 4 }]);
    await Promise.all(Array.from({ length: 5 }, () => hostsFile.addresses("cache")));
    expect(counts).toMatchObject({ stats: 7, reads: 1 });
  });

  it("answers from a rewritten file on the next lookup, even one of the same size", async () => {
    await writeFile(path, "10.1.2.3 cache\n");
    await utimes(path, 1_700_000_000, 1_700_000_000);
    const { counts, reader } = countingReader();
    const hostsFile = createHostsFile(path, reader);
    expect(await hostsFile.addresses("cache")).toEqual([{ address: "10.1.2.3", family: 4 }]);
    await writeFile(path, "10.9.9.9 cache\n");
    await utimes(path, 1_700_000_060, 1_700_000_060);
    expect(await hostsFile.addresses("cache")).toEqual([{ address: "10.9.9.9", family: 4 }]);
    expect(counts.reads).toBe(2);
  });

  it("answers from a file replaced by a rename (a new inode) even with the same size and mtime", async () => {
    await writeFile(path, "10.1.2.3 cache\n");
    await utimes(path, 1_700_000_000, 1_700_000_000);
    const hostsFile = createHostsFile(path);
    expect(await hostsFile.addresses("cache")).toEqual([{ address: "10.1.2.3", family: 4 }]);
    await writeFile(`${path}.new`, "10.9.9.9 cache\n");
    await utimes(`${path}.new`, 1_700_000_000, 1_700_000_000);
    await rename(`${path}.new`, path);
    expect(await hostsFile.addresses("cache")).toEqual([{ address: "10.9.9.9", family: 4 }]);
  });

  it("names nothing while the file is missing or unreadable, and answers from it on the first lookup after it can be read", async () => {
    const { counts, reader } = countingReader();
    const hostsFile = createHostsFile(path, reader);
    expect(await hostsFile.addresses("cache")).toEqual([]);
    await writeFile(path, "10.1.2.3 cache\n");
    counts.failReads = 1;
    expect(await hostsFile.addresses("cache")).toEqual([]);
    expect(await hostsFile.addresses("cache")).toEqual([{ address: "10.1.2.3", family: 4 }]);
    expect(counts.reads).toBe(2);
  });

  it("answers every name and alias of a line case-insensitively, IPv6 lines too, in file order and each address once, skipping comments", async () => {
    await writeFile(
      path,
      [
        "# static names",
        "127.0.0.1\tlocalhost localhost.localdomain",
        "::1     localhost ip6-localhost ip6-loopback   # IPv6 loopback",
        "10.1.2.3  build-cache.internal  Cache  # Docker's extra_hosts",
        "10.1.2.4  cache\r",
        "10.1.2.3  CACHE",
        "  # 10.9.9.9 commented-out",
        "not-an-address  bogus",
        "2001:db8::5 cache",
        "",
      ].join("\n"),
    );
    const hostsFile = createHostsFile(path);
    expect(await hostsFile.addresses("localhost")).toEqual([{ address: "127.0.0.1", family: 4 }, { address: "::1", family: 6 }]);
    expect(await hostsFile.addresses("LOCALHOST.localdomain.")).toEqual([{ address: "127.0.0.1", family: 4 }]);
    expect(await hostsFile.addresses("ip6-loopback")).toEqual([{ address: "::1", family: 6 }]);
    expect(await hostsFile.addresses("cache")).toEqual([
      { address: "10.1.2.3", family: 4 },
      { address: "10.1.2.4", family: 4 },
      { address: "2001:db8::5", family: 6 },
    ]);
    expect(await hostsFile.addresses("commented-out")).toEqual([]);
    expect(await hostsFile.addresses("bogus")).toEqual([]);
    expect(await hostsFile.addresses("not-in-the-file")).toEqual([]);
  });
});
