import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { findServiceProcesses } from "./memory.js";

/** Clock ticks per second of /proc/<pid>/stat's times (CLK_TCK; 100 on Linux unless built otherwise). */
const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

interface ProcStat {
  comm: string;
  ppid: number;
  /** utime + stime, ms. */
  ownMs: number;
  /** stime alone, ms: time in the kernel on the process's behalf (system calls, page faults). */
  kernelMs: number;
  /** cutime + cstime, ms: children that exited and were reaped (a PostgreSQL backend that disconnected). */
  reapedMs: number;
}

function procStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // `pid (comm) state ppid ...`: comm may hold spaces and parentheses, so split after its last ')'.
  const close = text.lastIndexOf(")");
  const comm = text.slice(text.indexOf("(") + 1, close);
  const fields = text.slice(close + 2).split(" ");
  // fields[0] is field 3 (state): utime is field 14, stime 15, cutime 16, cstime 17.
  const at = (field: number) => Number(fields[field - 3]);
  const toMs = (ticks: number) => (ticks * 1000) / TICKS_PER_SECOND;
  return { comm, ppid: at(4), ownMs: toMs(at(14) + at(15)), kernelMs: toMs(at(15)), reapedMs: toMs(at(16) + at(17)) };
}

/** CPU a process has used itself (user + system), in ms; undefined once it is gone. */
export function processCpuMs(pid: number): number | undefined {
  return procStat(pid)?.ownMs;
}

/** The part of processCpuMs spent in the kernel (stime), in ms; undefined once the process is gone. */
export function processKernelMs(pid: number): number | undefined {
  return procStat(pid)?.kernelMs;
}

/** Every process under `root` (itself excluded), from /proc/<pid>/task/<tid>/children. */
function descendants(root: number): number[] {
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    let children: number[] = [];
    try {
      children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      // gone
    }
    out.push(...children);
    queue.push(...children);
  }
  return out;
}

/** CPU ms of a set of processes; the reaped children of a PostgreSQL postmaster count (its backends come and go). */
function cpuMsOf(pids: number[], { withReaped = false, kernelOnly = false }: { withReaped?: boolean; kernelOnly?: boolean } = {}): number {
  let total = 0;
  for (const pid of pids) {
    const stat = procStat(pid);
    if (stat) total += (kernelOnly ? stat.kernelMs : stat.ownMs) + (withReaped ? stat.reapedMs : 0);
  }
  return total;
}

/** The processes of the benchmarked system, as groups whose CPU is accounted separately. */
export interface SystemProcesses {
  /** The service processes by name (`webhook-dispatcher`, `jobs`, ...), from the run's NATS namespace. */
  services: Array<{ name: string; pid: number }>;
  /** The PostgreSQL server the bench started: its postmaster and every backend. */
  postgres: { postmaster: number | undefined; all: number[] };
  /** nats-server processes the bench started. */
  nats: number[];
}

/** Finds the system's processes now (call again after a replica starts: backends come and go, which is accounted). */
export function systemProcesses(namespace: string): SystemProcesses {
  const tree = descendants(process.pid);
  const stats = new Map(tree.map((pid) => [pid, procStat(pid)]));
  const postgres = tree.filter((pid) => stats.get(pid)?.comm.startsWith("postgres"));
  const postmaster = postgres.find((pid) => !postgres.includes(stats.get(pid)!.ppid));
  return {
    services: findServiceProcesses(namespace),
    postgres: { postmaster, all: postgres },
    nats: tree.filter((pid) => stats.get(pid)?.comm === "nats-server"),
  };
}

/** CPU ms of PostgreSQL (postmaster with its reaped backends, plus the live ones). */
export function postgresCpuMs(system: SystemProcesses): number {
  const { postmaster } = system.postgres;
  // Backends are re-listed now: one connected after the list was made counts too.
  const live = postmaster ? descendants(postmaster) : [];
  return (postmaster ? cpuMsOf([postmaster], { withReaped: true }) : 0) + cpuMsOf(live);
}

/** The key of a group's kernel time (stime) in a {@link cpuSnapshot}. */
export const kernelOf = (group: string) => `${group}:kernel`;

/**
 * CPU ms of each accounted group right now: `dispatcher` (every replica), `services`, `postgres`, `nats`, and `extra`
 * pids; for the dispatcher and each extra pid also the part spent in the kernel, under {@link kernelOf} its name.
 */
export function cpuSnapshot(system: SystemProcesses, extra: Record<string, number> = {}): Record<string, number> {
  const dispatcher = system.services.filter((s) => s.name.startsWith("webhook-dispatcher")).map((s) => s.pid);
  return {
    dispatcher: cpuMsOf(dispatcher),
    [kernelOf("dispatcher")]: cpuMsOf(dispatcher, { kernelOnly: true }),
    services: cpuMsOf(system.services.map((s) => s.pid)),
    postgres: postgresCpuMs(system),
    nats: cpuMsOf(system.nats),
    ...Object.fromEntries(Object.entries(extra).flatMap(([name, pid]) => [[name, cpuMsOf([pid])], [kernelOf(name), cpuMsOf([pid], { kernelOnly: true })]])),
  };
}

/** after - before, per group. */
export function cpuSpent(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.keys(after).map((name) => [name, Math.max(0, (after[name] ?? 0) - (before[name] ?? 0))]));
}

/**
 * CPU ms per second each service process spends idle, over `windowMs`: its timers and safety-net polls, which a
 * replica capped at a small share of a core pays before any work (at 0.075 core, 10 ms/s is an eighth of it).
 */
export async function idleCpuMsPerSecond(namespace: string, windowMs: number): Promise<Record<string, number>> {
  const services = findServiceProcesses(namespace);
  const before = new Map(services.map(({ pid }) => [pid, processCpuMs(pid)]));
  const started = Date.now();
  await new Promise((resolve) => setTimeout(resolve, windowMs));
  const seconds = (Date.now() - started) / 1000;
  const result: Record<string, number> = {};
  for (const { name, pid } of services) {
    const [from, to] = [before.get(pid), processCpuMs(pid)];
    if (from !== undefined && to !== undefined) result[name] = Math.round(((to - from) / seconds) * 10) / 10;
  }
  return result;
}
