import { describe, expect, it } from "vitest";
import { createRefreshAheadCache } from "./refresh-ahead-cache.js";

/** A cache over a loader that counts its calls and answers `version-N`, with a clock the test moves. */
function cacheWithClock({ ttlMs = 1000, random = (): number => 0 }: { ttlMs?: number; random?: () => number } = {}) {
  let time = 0;
  const loads: Array<{ key: string; fresh: boolean }> = [];
  let pending: Array<{ resolve: (value: string) => void; reject: (error: Error) => void }> = [];
  let manual = false;
  const cache = createRefreshAheadCache(
    (key, fresh) => {
      loads.push({ key, fresh });
      const version = `${key}-${loads.length}`;
      if (!manual) return Promise.resolve(version);
      return new Promise<string>((resolve, reject) => pending.push({ resolve: () => resolve(version), reject }));
    },
    { ttlMs, now: () => time, random },
  );
  return {
    cache,
    loads,
    at: (ms: number) => (time = ms),
    holdLoads: () => (manual = true),
    settle: async (how: "resolve" | "reject" = "resolve") => {
      for (const load of pending) {
        if (how === "resolve") load.resolve("");
        else load.reject(new Error("auth unavailable"));
      }
      pending = [];
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

describe("a refresh-ahead cache (an org's webhook target and endpoints)", () => {
  it("answers from the entry until 70% of the TTL, then from the entry while one reload runs, then from the reload", async () => {
    const { cache, loads, at, holdLoads, settle } = cacheWithClock();
    expect(await cache.get("org_a")).toBe("org_a-1");
    at(699);
    expect(await cache.get("org_a")).toBe("org_a-1");
    expect(loads).toHaveLength(1);

    holdLoads();
    at(700);
    // Past the refresh point: no wait for the reload, and a second get does not start another.
    expect(await cache.get("org_a")).toBe("org_a-1");
    expect(await cache.get("org_a")).toBe("org_a-1");
    expect(loads).toHaveLength(2);
    await settle();
    expect(await cache.get("org_a")).toBe("org_a-2");
    // The reload's entry lives a TTL from its start (700), refreshed again from 70% of it.
    at(1399);
    expect(await cache.get("org_a")).toBe("org_a-2");
    expect(loads).toHaveLength(2);
  });

  it("never serves an entry past its TTL: a key unused for a whole TTL waits for its load", async () => {
    const { cache, loads, at, holdLoads, settle } = cacheWithClock();
    await cache.get("org_a");
    holdLoads();
    at(1000);
    const next = cache.get("org_a");
    let answered = false;
    void next.then(() => (answered = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBe(false);
    await settle();
    expect(await next).toBe("org_a-2");
    expect(loads).toHaveLength(2);
  });

  it("spreads the refreshes of entries loaded together over 70-90% of the TTL", async () => {
    const draws = [0, 0.5, 1];
    const { cache, loads, at } = cacheWithClock({ random: () => draws.shift()! });
    for (const org of ["org_a", "org_b", "org_c"]) await cache.get(org);
    const refreshedAt = async (ms: number) => {
      at(ms);
      for (const org of ["org_a", "org_b", "org_c"]) await cache.get(org);
      return loads.slice(3).map((load) => load.key);
    };
    expect(await refreshedAt(750)).toEqual(["org_a"]);
    expect(await refreshedAt(850)).toEqual(["org_a", "org_b"]);
    expect(await refreshedAt(900)).toEqual(["org_a", "org_b", "org_c"]);
  });

  it("keeps serving the entry when a reload fails, and tries again a second later", async () => {
    const { cache, loads, at, holdLoads, settle } = cacheWithClock({ ttlMs: 10_000 });
    await cache.get("org_a");
    holdLoads();
    at(7000);
    expect(await cache.get("org_a")).toBe("org_a-1");
    await settle("reject");
    at(7500);
    expect(await cache.get("org_a")).toBe("org_a-1");
    expect(loads).toHaveLength(2);
    at(8000);
    expect(await cache.get("org_a")).toBe("org_a-1");
    expect(loads).toHaveLength(3);
    await settle();
    expect(await cache.get("org_a")).toBe("org_a-3");
  });

  it("does not keep a reload that was under way when the key was forgotten (it may predate the change)", async () => {
    const { cache, loads, at, holdLoads, settle } = cacheWithClock();
    await cache.get("org_a");
    holdLoads();
    at(800);
    await cache.get("org_a");
    cache.forget("org_a");
    const afterChange = cache.get("org_a");
    await settle();
    expect(await afterChange).toBe("org_a-3");
    expect(await cache.get("org_a")).toBe("org_a-3");
    expect(loads.map((load) => load.fresh)).toEqual([false, false, false]);
  });

  it("loads with fresh when asked, and does not cache a failed load", async () => {
    const { cache, loads, holdLoads, settle } = cacheWithClock();
    await cache.get("org_a");
    expect(await cache.get("org_a", { fresh: true })).toBe("org_a-2");
    expect(loads[1]).toEqual({ key: "org_a", fresh: true });
    holdLoads();
    cache.forgetAll();
    const failed = cache.get("org_a");
    await settle("reject");
    await expect(failed).rejects.toThrow("auth unavailable");
    const retried = cache.get("org_a");
    await settle();
    expect(await retried).toBe("org_a-4");
  });
});
