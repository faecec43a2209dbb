/**
 * `tsx bench/profile-summary.ts <file.cpuprofile> [top]`: the functions with the most self time in a V8 CPU
 * profile (as written by `npm run bench -- --profile <dir>`), aggregated by function and location.
 */
import { readFileSync } from "node:fs";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export function topSelfTime(profile: CpuProfile, top = 25): Array<{ fn: string; selfMs: number; share: number }> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, index) => {
    const delta = (profile.timeDeltas[index] ?? 0) / 1000;
    total += delta;
    const frame = byId.get(id)!.callFrame;
    const where = frame.url.replace(/^.*\/(node_modules|services|libs)\//, "$1/");
    const key = `${frame.functionName || "(anonymous)"} ${where}:${frame.lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + delta);
  });
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([fn, ms]) => ({ fn, selfMs: Math.round(ms), share: Math.round((ms / total) * 1000) / 10 }));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const profile = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as CpuProfile;
  for (const row of topSelfTime(profile, Number(process.argv[3] ?? 25))) console.log(`${String(row.share).padStart(5)}%  ${String(row.selfMs).padStart(7)} ms  ${row.fn}`);
}
