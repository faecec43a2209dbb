import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { describeLeftovers, trackArmedTimers, type ArmedTimers } from "./armed-timers.js";

describe("timers a test file leaves armed", () => {
  let tracker: ArmedTimers | undefined;
  afterEach(() => tracker?.uninstall());

  const track = (roots = [import.meta.dirname]) => {
    tracker = trackArmedTimers({ roots, minDelayMs: 20 });
    tracker.enterFile("a.test.ts");
    return tracker;
  };

  it("are the long ones our code armed and nobody cleared, and they are cleared when taken", async () => {
    const timers = track();
    let fired = false;
    setTimeout(() => (fired = true), 60);
    const interval = setInterval(() => undefined, 1_000);
    expect(timers.takeLeftovers("b.test.ts")).toEqual([]);

    const leftovers = timers.takeLeftovers("a.test.ts");
    expect(leftovers.map(({ kind, delayMs }) => ({ kind, delayMs }))).toEqual([
      { kind: "setTimeout", delayMs: 60 },
      { kind: "setInterval", delayMs: 1_000 },
    ]);
    expect(leftovers[0]!.armedAt[0]).toContain("armed-timers.test.ts");
    expect((interval as unknown as { _destroyed: boolean })._destroyed).toBe(true);
    await sleep(100);
    expect(fired).toBe(false);
    expect(describeLeftovers("a.test.ts", leftovers)).toMatch(/a\.test\.ts left 2 timer\(s\) armed[\s\S]+setTimeout\(\.\.\., 60\) armed at\n\s+at .+armed-timers\.test\.ts/);
  });

  it("leave out timers that fired, were cleared, are short, or were armed by code outside the roots", async () => {
    const timers = track();
    setTimeout(() => undefined, 25);
    clearTimeout(setTimeout(() => undefined, 1_000));
    clearInterval(setInterval(() => undefined, 1_000));
    setTimeout(() => undefined, 5);
    await sleep(60);
    expect(timers.takeLeftovers("a.test.ts")).toEqual([]);

    timers.uninstall();
    const elsewhere = track(["/not/this/repository/"]);
    const timer = setTimeout(() => undefined, 1_000);
    expect(elsewhere.takeLeftovers("a.test.ts")).toEqual([]);
    clearTimeout(timer);
  });

  it("keeps promisified setTimeout working through its wrapper", async () => {
    track();
    const { promisify } = await import("node:util");
    await expect(promisify(setTimeout)(5, "value")).resolves.toBe("value");
  });
});
