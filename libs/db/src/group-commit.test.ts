import { describe, expect, it } from "vitest";
import { GroupCommit } from "./group-commit.js";

describe("GroupCommit", () => {
  it("writes an item submitted alone in a batch of one", async () => {
    const batches: number[][] = [];
    const group = new GroupCommit<number, number>(async (items) => {
      batches.push(items);
      return items.map((n) => n * 10);
    });
    expect(await group.submit(1)).toBe(10);
    expect(batches).toEqual([[1]]);
  });

  it("puts items that arrive while a batch is being written into the next batch, results in order", async () => {
    const batches: number[][] = [];
    let release!: () => void;
    const firstWrite = new Promise<void>((resolve) => (release = resolve));
    const group = new GroupCommit<number, string>(async (items) => {
      batches.push(items);
      if (batches.length === 1) await firstWrite;
      return items.map((n) => `r${n}`);
    });
    const first = group.submit(0);
    await new Promise((resolve) => setImmediate(resolve));
    const rest = [1, 2, 3].map((n) => group.submit(n));
    release();
    expect(await Promise.all([first, ...rest])).toEqual(["r0", "r1", "r2", "r3"]);
    expect(batches).toEqual([[0], [1, 2, 3]]);
  });

  it("never puts more than maxBatch items in one write", async () => {
    const sizes: number[] = [];
    const group = new GroupCommit<number, number>(async (items) => {
      sizes.push(items.length);
      return items;
    }, 2);
    await Promise.all([1, 2, 3, 4, 5].map((n) => group.submit(n)));
    expect(sizes).toEqual([2, 2, 1]);
  });

  it("when a batch fails, retries its items one by one so only the bad item's caller sees the error", async () => {
    const group = new GroupCommit<number, number>(async (items) => {
      if (items.includes(13)) throw new Error("bad item");
      return items;
    });
    const results = await Promise.allSettled([12, 13, 14].map((n) => group.submit(n)));
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason).toEqual(new Error("bad item"));
  });
});
