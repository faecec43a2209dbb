import { readdirSync, readFileSync } from "node:fs";

/** One service process of the benchmarked system. */
export interface ServiceProcess {
  /** e.g. `gateway`, `webhook-dispatcher#2` */
  name: string;
  pid: number;
}

const readText = (path: string): string | undefined => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
};

/** VmRSS of a process in MB, from /proc/<pid>/status; undefined once it is gone. */
export function rssMb(pid: number): number | undefined {
  const match = /VmRSS:\s+(\d+)\s+kB/.exec(readText(`/proc/${pid}/status`) ?? "");
  return match ? Math.round((Number(match[1]) / 1024) * 10) / 10 : undefined;
}

/**
 * The Node processes running services of the system whose NATS namespace is `namespace`. A bundled service
 * (`node services/<name>/dist/main.mjs`) is its own process. The `tsx` CLI starts a service from source as a child
 * node process of a small launcher; both carry `services/<name>/src/main.ts` on their command line, and the service
 * is the child. A process a service spawns with its own command line (none do today) is not counted twice.
 */
export function findServiceProcesses(namespace: string): ServiceProcess[] {
  const candidates: Array<{ pid: number; ppid: number; service: string; launcher: boolean }> = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = readText(`/proc/${entry}/cmdline`)?.split("\0") ?? [];
    const script = cmdline.find((arg) => /services\/[a-z-]+\/(src\/main\.ts|dist\/main\.mjs)$/.test(arg));
    if (!script) continue;
    const environ = readText(`/proc/${entry}/environ`) ?? "";
    if (!environ.split("\0").includes(`NATS_NAMESPACE=${namespace}`)) continue;
    const ppid = Number(/PPid:\s+(\d+)/.exec(readText(`/proc/${entry}/status`) ?? "")?.[1] ?? 0);
    // The launcher's script is the tsx CLI; its child (and a `node --import tsx` service) names another script.
    const launcher = /(^|\/)tsx$|tsx\/dist\/cli\.m?js$/.test(cmdline[1] ?? "");
    candidates.push({ pid: Number(entry), ppid, service: /services\/([a-z-]+)\//.exec(script)![1]!, launcher });
  }
  const byPid = new Map(candidates.map((c) => [c.pid, c]));
  const services = candidates
    .filter((c) => !c.launcher && (!byPid.has(c.ppid) || byPid.get(c.ppid)!.launcher))
    .sort((a, b) => a.pid - b.pid);
  const seen = new Map<string, number>();
  return services.map((s) => {
    const n = (seen.get(s.service) ?? 0) + 1;
    seen.set(s.service, n);
    return { name: n === 1 ? s.service : `${s.service}#${n}`, pid: s.pid };
  });
}

/** Peak RSS per service process over the phases of a run, sampled in the background. */
export class MemorySampler {
  private readonly peaks = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly namespace: string) {}

  /** RSS of every service process now. */
  snapshot(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const process of findServiceProcesses(this.namespace)) {
      const rss = rssMb(process.pid);
      if (rss !== undefined) out[process.name] = rss;
    }
    return out;
  }

  /** Starts sampling every `intervalMs`, keeping the peak per service. */
  start(intervalMs = 250): void {
    this.timer = setInterval(() => {
      for (const [name, rss] of Object.entries(this.snapshot())) this.peaks.set(name, Math.max(this.peaks.get(name) ?? 0, rss));
    }, intervalMs);
    this.timer.unref();
  }

  stop(): Record<string, number> {
    clearInterval(this.timer);
    return Object.fromEntries([...this.peaks].sort(([a], [b]) => a.localeCompare(b)));
  }
}
