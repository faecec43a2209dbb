import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { processCpuMs, processKernelMs } from "./cpu.js";

/**
 * A child that, once told to ("go" on its stdin), spends about `ms` of CPU of one kind, then says "done" and idles:
 * what it spends starting up is left out of what the test compares.
 */
async function childReadyToSpend(kind: "user" | "kernel", ms: number): Promise<ChildProcess> {
  // In user space arithmetic, looking at the clock every million steps (getrusage is a system call itself); in the
  // kernel a 1-byte read of /dev/zero in a loop.
  const work =
    kind === "user"
      ? `let x = 0; const end = process.cpuUsage().user + ${ms * 1000}; do { for (let i = 0; i < 1e6; i++) x += i; } while (process.cpuUsage().user < end);`
      : `const fd = require("node:fs").openSync("/dev/zero", "r"); const b = Buffer.alloc(1); const end = process.cpuUsage().system + ${ms * 1000}; while (process.cpuUsage().system < end) require("node:fs").readSync(fd, b, 0, 1, null);`;
  const script = `process.stdin.once("data", () => { ${work} process.stdout.write("done"); setInterval(() => {}, 1000); }); process.stdout.write("ready");`;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["pipe", "pipe", "ignore"] });
  await once(child.stdout!, "data");
  return child;
}

/** What `child` spends (all CPU, and the kernel's part, in ms) between "go" and "done". */
async function spentBy(child: ChildProcess): Promise<{ total: number; kernel: number }> {
  const before = { total: processCpuMs(child.pid!)!, kernel: processKernelMs(child.pid!)! };
  child.stdin!.write("go\n");
  await once(child.stdout!, "data");
  return { total: processCpuMs(child.pid!)! - before.total, kernel: processKernelMs(child.pid!)! - before.kernel };
}

describe("process CPU from /proc", () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.kill("SIGKILL");
  });

  it("counts user and kernel time, and tells the kernel's part apart", async () => {
    const [busy, syscalls] = await Promise.all([childReadyToSpend("user", 300), childReadyToSpend("kernel", 300)]);
    children.push(busy, syscalls);
    const [inUserSpace, inKernel] = await Promise.all([spentBy(busy), spentBy(syscalls)]);
    // Each spent at least 300 ms of its kind (/proc counts in ticks of 10 ms).
    expect(inUserSpace.total).toBeGreaterThanOrEqual(290);
    expect(inKernel.kernel).toBeGreaterThanOrEqual(290);
    expect(inKernel.kernel).toBeLessThanOrEqual(inKernel.total);
    expect(inUserSpace.kernel).toBeLessThan(inUserSpace.total / 4);
  });

  it("reads nothing for a process that is gone", async () => {
    const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    await once(child, "exit");
    expect(processCpuMs(child.pid!)).toBeUndefined();
    expect(processKernelMs(child.pid!)).toBeUndefined();
  });
});
