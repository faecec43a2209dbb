import type { BenchmarkResult, TargetCheck } from "../result.js";
import { below } from "../result.js";

/**
 * Benchmark 6 (issue 10): RSS of each service process (/proc/<pid>/status VmRSS of the node process that runs the
 * service's bundle, as in production), idle after start-up and at its peak while the other benchmarks ran.
 */
export function memoryResult(idle: Record<string, number>, peak: Record<string, number>, idleCpu: Record<string, number> = {}): BenchmarkResult {
  const names = [...new Set([...Object.keys(idle), ...Object.keys(peak)])].sort();
  const targets: TargetCheck[] = [];
  for (const name of names) {
    if (idle[name] !== undefined) targets.push(below(`${name} RSS idle`, idle[name], 150, " MB"));
    if (peak[name] !== undefined) targets.push(below(`${name} RSS under load (peak)`, peak[name], 300, " MB"));
  }
  return {
    id: "memory",
    title: "6. Memory per service (RSS)",
    baseline: "none (absolute)",
    columns: ["service", "idle MB", "peak under benchmark load MB", "idle CPU ms/s"],
    rows: names.map((name) => [name, idle[name] ?? "-", peak[name] ?? "-", idleCpu[name] ?? "-"]),
    targets,
    notes: ["Idle: after start-up and org creation, before any load. Peak: highest sample (every 250 ms) during benchmarks 1-5 and 7 and 2. `webhook-dispatcher#2` is the extra replica of benchmarks 4-5 (it is not running when idle is sampled).", "Idle CPU: CPU ms per second of each idle service process over 10 s after the idle RSS (3 s in a quick run): timers, safety-net polls and metrics, which a replica under a small CPU cap pays before any work."],
    data: { idle, peak, idleCpu },
  };
}
