import { accessSync, constants, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * A fixed share of one core for a group of processes, through cgroup v1's CFS quota (`cpu.cfs_quota_us` over
 * `cpu.cfs_period_us` under /sys/fs/cgroup/cpu; root on these machines). Capping each replica of a service at the
 * same small share makes "N replicas" mean "N times the CPU" even on a 2-core machine, so a replica curve shows
 * whether the design scales rather than how busy the rest of the machine is.
 */
export interface CpuCap {
  /** Share of one core, e.g. 0.2. */
  readonly cores: number;
  /** Moves a process (and the threads and children it starts from now on) into the group. */
  add(pid: number): void;
  /** Moves every process back to the root group and removes the group. */
  remove(): void;
}

const CPU_ROOT = "/sys/fs/cgroup/cpu";
const PERIOD_US = 100_000;

/** Why capped runs cannot happen here, or undefined when they can (cgroup v1 cpu controller, writable). */
export function cpuCapUnavailable(): string | undefined {
  try {
    accessSync(join(CPU_ROOT, "cgroup.procs"), constants.W_OK);
    accessSync(join(CPU_ROOT, "cpu.cfs_quota_us"), constants.R_OK);
    return undefined;
  } catch {
    return `no writable cgroup v1 cpu controller at ${CPU_ROOT} (needs root and cgroup v1)`;
  }
}

/** Removes groups an earlier run left behind once their processes are gone (a group with a process in it stays). */
export function removeStaleCpuCaps(): void {
  for (const name of readdirSync(CPU_ROOT).filter((entry) => entry.startsWith("renderbus-bench-"))) {
    try {
      rmdirSync(join(CPU_ROOT, name));
    } catch {
      // still has a process
    }
  }
}

/** Creates a group capped at `cores` of one core. Throws when cpuCapUnavailable() says why it cannot. */
export function createCpuCap(name: string, cores: number): CpuCap {
  if (!(cores > 0 && cores <= 64)) throw new Error(`a CPU cap must be in (0, 64] cores, not ${cores}`);
  const dir = join(CPU_ROOT, `renderbus-bench-${name}-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "cpu.cfs_period_us"), String(PERIOD_US));
  writeFileSync(join(dir, "cpu.cfs_quota_us"), String(Math.round(cores * PERIOD_US)));
  return {
    cores,
    add(pid) {
      writeFileSync(join(dir, "cgroup.procs"), String(pid));
    },
    remove() {
      let pids: string[] = [];
      try {
        pids = readFileSync(join(dir, "cgroup.procs"), "utf8").split("\n").filter(Boolean);
      } catch {
        return;
      }
      for (const pid of pids) {
        try {
          writeFileSync(join(CPU_ROOT, "cgroup.procs"), pid);
        } catch {
          // exited meanwhile
        }
      }
      try {
        rmdirSync(dir);
      } catch {
        // a process still inside (it raced us): removeStaleCpuCaps at the next run removes the group
      }
    },
  };
}
