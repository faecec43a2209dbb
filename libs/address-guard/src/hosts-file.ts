import type { LookupAddress } from "node:dns";
import { readFile, stat } from "node:fs/promises";
import { isIP } from "node:net";

/** Where the operating system keeps its static names (`localhost`, Docker's `host.docker.internal`, k8s hostAliases). */
const SYSTEM_HOSTS_FILE = "/etc/hosts";

/** The two file operations a {@link HostsFile} makes: node:fs unless a test counts them. */
export interface HostsFileReader {
  stat(path: string): Promise<{ mtimeMs: number; size: number; ino: number }>;
  readFile(path: string): Promise<string>;
}

const fileSystem: HostsFileReader = { stat: (path) => stat(path), readFile: (path) => readFile(path, "utf8") };

/** The names of a hosts file. */
export interface HostsFile {
  /** The addresses the file gives `hostname` (case-insensitive), in file order; empty when it names none or cannot be read. */
  addresses(hostname: string): Promise<LookupAddress[]>;
}

type HostsTable = Map<string, LookupAddress[]>;

/** Every name of a hosts file's text, lowercased, with its addresses in file order, each once. */
function parseHostsFile(text: string): HostsTable {
  const table: HostsTable = new Map();
  for (const line of text.split("\n")) {
    const [address = "", ...names] = line.replace(/#.*/, "").trim().split(/\s+/);
    const family = isIP(address);
    if (family === 0) continue;
    for (const name of names) {
      const known = table.get(name.toLowerCase());
      if (!known) table.set(name.toLowerCase(), [{ address, family }]);
      else if (!known.some((entry) => entry.address === address)) known.push({ address, family });
    }
  }
  return table;
}

/**
 * The hosts file at `path`. Every webhook attempt and input download resolves a name, so the file is parsed only when
 * its stat (inode, size, mtime) changed since the last read, not on each lookup; it is still stat-ed each time because
 * Docker and Kubernetes rewrite it after the process starts. The stat is taken before the read, so the text cached
 * under a stat is never older than that stat. A file that cannot be stat-ed or read names nothing and is tried again
 * on the next lookup.
 */
export function createHostsFile(path: string = SYSTEM_HOSTS_FILE, reader: HostsFileReader = fileSystem): HostsFile {
  let cached: { version: string; table: Promise<HostsTable> } | undefined;

  const currentTable = async (): Promise<HostsTable> => {
    let version: string;
    try {
      const { ino, size, mtimeMs } = await reader.stat(path);
      version = `${ino}:${size}:${mtimeMs}`;
    } catch {
      cached = undefined;
      return new Map();
    }
    if (cached?.version !== version) cached = { version, table: reader.readFile(path).then(parseHostsFile) };
    const { table } = cached;
    return table.catch(() => {
      // Unreadable (a permission change does not touch the stat above): read again next time.
      if (cached?.table === table) cached = undefined;
      return new Map();
    });
  };

  return {
    async addresses(hostname) {
      const entries = (await currentTable()).get(hostname.toLowerCase().replace(/\.$/, "")) ?? [];
      // Copies: the cached entries outlive this caller.
      return entries.map((entry) => ({ ...entry }));
    },
  };
}
