import { describe, expect, it } from "vitest";
import { TasksInFlight } from "./tasks-in-flight.js";

function deferred() {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("TasksInFlight", () => {
  it("lets a loop go on only once a slot is free", async () => {
    const tasks = new TasksInFlight();
    const first = deferred();
    tasks.add(first.promise);
    let through = false;
    const waiting = tasks.whileFull(1).then(() => (through = true));
    await tick();
    expect(through).toBe(false);
    first.resolve();
    await waiting;
    expect(tasks.size).toBe(0);
  });

  it("frees the slot of a task that rejects", async () => {
    const tasks = new TasksInFlight();
    const failing = deferred();
    tasks.add(failing.promise);
    const waiting = tasks.whileFull(1);
    failing.reject(new Error("handler failed"));
    await waiting;
    expect(tasks.size).toBe(0);
  });

  it("wakes every waiting loop, so one that takes no message leaves the slot to the others", async () => {
    const tasks = new TasksInFlight();
    const only = deferred();
    tasks.add(only.promise);
    const woken: string[] = [];
    const a = tasks.whileFull(1).then(() => woken.push("a"));
    const b = tasks.whileFull(1).then(() => woken.push("b"));
    only.resolve();
    await Promise.all([a, b]);
    expect(woken.sort()).toEqual(["a", "b"]);
  });

  it("settled() waits for the tasks in flight", async () => {
    const tasks = new TasksInFlight();
    const one = deferred();
    tasks.add(one.promise);
    let done = false;
    const all = tasks.settled().then(() => (done = true));
    await tick();
    expect(done).toBe(false);
    one.resolve();
    await all;
    expect(done).toBe(true);
  });
});
