import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { afterEach, describe, expect, it } from "vitest";
import { processCpuMs, processKernelMs } from "./cpu.js";

/** A child that spends about `ms` of CPU, then waits to be read and killed. */
async function childSpending(kind: "user" | "kernel", ms: number): Promise<ChildProcess> {
  // In user space a busy loop; in the kernel a system call in a loop (a 1-byte read of /dev/zero).
  const work =
    kind === "user"
      ? `const end = process.cpuUsage().user + ${ms * 1000}; while (process.cpuUsage().user < end) {}`
      : `const fs = require("node:fs"); const fd = fs.openSync("/dev/zero", "r"); const b = Buffer.alloc(1); const end = process.cpuUsage().system + ${ms * 1000}; while (process.cpuUsage().system < end) fs.readSync(fd, b, 0, 1, null);`;
  const child = spawn(process.execPath, ["-e", `${work}; process.stdout.write("done"); setInterval(() => {}, 1000);`], { stdio: ["ignore", "pipe", "ignore"] });
  await once(child.stdout!, "data");
  return child;
}

describe("process CPU from /proc", () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.kill("SIGKILL");
  });

  it("counts user and kernel time, and tells the kernel's part apart", async () => {
    const [busy, syscalls] = await Promise.all([childSpending("user", 300), childSpending("kernel", 300)]);
    children.push(busy, syscalls);
    const total = (child: ChildProcess) => processCpuMs(child.pid!)!;
    const kernel = (child: ChildProcess) => processKernelMs(child.pid!)!;
    // Each spent at least 300 ms of its kind (start-up adds some of both).
    expect(total(busy)).toBeGreaterThanOrEqual(300);
    expect(total(syscalls)).toBeGreaterThanOrEqual(300);
    expect(kernel(syscalls)).toBeGreaterThanOrEqual(250);
    expect(kernel(busy)).toBeLessThan(total(busy) / 2);
    expect(kernel(syscalls)).toBeLessThanOrEqual(total(syscalls));
  });

  it("reads nothing for a process that is gone", async () => {
    const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
    await once(child, "exit");
    expect(processCpuMs(child.pid!)).toBeUndefined();
    expect(processKernelMs(child.pid!)).toBeUndefined();
  });
});
