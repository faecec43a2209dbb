import { describe, expect, it } from "vitest";
import { pauseWhileIdle, type Pausable } from "./pause-while-idle.js";

/** A process that records its signals, and a system that is idle or not as `busyChecks` says, check after check. */
function scene(busyChecks: boolean[]) {
  const signals: string[] = [];
  const processes: Pausable[] = ["a", "b"].map((name) => ({ kill: (signal: string) => signals.push(`${name}:${signal}`) }));
  let check = 0;
  const waitIdle = async () => {
    const busy = busyChecks[check] ?? false;
    check += 1;
    signals.push(busy ? "busy" : "idle");
    if (busy) throw new Error("still busy");
  };
  return { signals, processes, waitIdle };
}

describe("pausing replicas while the system is idle", () => {
  it("pauses once the system is idle and returns when it stays idle", async () => {
    const { signals, processes, waitIdle } = scene([]);
    await pauseWhileIdle(processes, { waitIdle, settleMs: 0 });
    expect(signals).toEqual(["idle", "a:SIGSTOP", "b:SIGSTOP", "idle"]);
  });

  it("resumes and pauses again when a paused process turns out to hold work (the system is busy after the pause)", async () => {
    const { signals, processes, waitIdle } = scene([false, true]);
    await pauseWhileIdle(processes, { waitIdle, settleMs: 0 });
    expect(signals).toEqual(["idle", "a:SIGSTOP", "b:SIGSTOP", "busy", "a:SIGCONT", "b:SIGCONT", "idle", "a:SIGSTOP", "b:SIGSTOP", "idle"]);
  });

  it("gives up after its tries, leaving the processes running", async () => {
    const { signals, processes, waitIdle } = scene([false, true, false, true]);
    await expect(pauseWhileIdle(processes, { waitIdle, settleMs: 0, attempts: 2 })).rejects.toThrow(/did not stay idle/);
    expect(signals.slice(-2)).toEqual(["a:SIGCONT", "b:SIGCONT"]);
  });
});
