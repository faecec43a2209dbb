import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { cpuCapUnavailable, createCpuCap } from "./cpu-cap.js";
import { processCpuMs } from "./cpu.js";

const cpuSeconds = (pid: number) => (processCpuMs(pid) ?? 0) / 1000;

const unavailable = cpuCapUnavailable();

describe("CPU cap (cgroup v1)", () => {
  it.skipIf(unavailable !== undefined)("holds a busy process to its share of a core, and releases it on remove", async () => {
    const busy = spawn(process.execPath, ["-e", "for(;;){}"], { stdio: "ignore" });
    const cap = createCpuCap("test", 0.1);
    try {
      cap.add(busy.pid!);
      const before = cpuSeconds(busy.pid!);
      await new Promise((done) => setTimeout(done, 2000));
      const used = cpuSeconds(busy.pid!) - before;
      // 0.1 core for 2 s is 0.2 s; a whole core would be 2 s. Loose bounds: the machine is shared.
      expect(used).toBeLessThan(0.6);
    } finally {
      cap.remove();
      busy.kill("SIGKILL");
    }
  });

  it("refuses a share that is not a positive number of cores", () => {
    expect(() => createCpuCap("bad", 0)).toThrow(/CPU cap/);
  });
});
