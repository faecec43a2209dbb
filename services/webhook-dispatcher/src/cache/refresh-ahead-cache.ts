/** Values kept per key (an org's webhook target, its endpoints), loaded on demand. */
export interface RefreshAheadCache<V> {
  /** The key's value: cached unless `fresh`, loaded (and waited for) when missing or older than the TTL. */
  get(key: string, options?: { fresh?: boolean }): Promise<V>;
  /** Drops the key's entry: the next `get` loads it (a refresh already under way is not kept). */
  forget(key: string): void;
  /** Drops every entry. */
  forgetAll(): void;
}

interface Entry<V> {
  value: Promise<V>;
  /** Past this the value is not served any more: the next `get` loads and waits. */
  expiresAt: number;
  /** Past this a `get` still answers from the entry, and loads a new value beside it. */
  refreshAt: number;
  refreshing: boolean;
}

/** A refresh starts between these shares of the TTL, at random, so entries loaded together are not reloaded together. */
const REFRESH_FROM = 0.7;
const REFRESH_SPREAD = 0.2;
/** After a failed refresh, the next `get` tries again no sooner than this (the old value still serves until the TTL). */
const RETRY_REFRESH_MS = 1000;

/**
 * A per-key cache that reloads an entry in use before it expires. An entry lives `ttlMs` from the start of its load
 * (never served longer, so the TTL still bounds how stale a value can be); from 70-90% of that, a `get` answers from
 * it and starts one reload whose value replaces it. Only a key unused for a whole TTL waits for its load again.
 *
 * Without it every org's entry, loaded together when the traffic began, expired together a TTL later, and that
 * second's deliveries waited for all the reloads at once: in the bench (2026-12-01, bench/findings.md "Twenty-seventh
 * round") one window a minute where the lag from event to first attempt rose to 300-800 ms.
 *
 * Concurrent loads of one key share one promise; a failed load is not cached (the next `get` tries again); at most
 * `maxEntries` are kept, the oldest dropped first.
 */
export function createRefreshAheadCache<V>(
  load: (key: string, fresh: boolean) => Promise<V>,
  { ttlMs, maxEntries = 10_000, now = Date.now, random = Math.random }: { ttlMs: number; maxEntries?: number; now?: () => number; random?: () => number },
): RefreshAheadCache<V> {
  const cache = new Map<string, Entry<V>>();
  const entryOf = (value: Promise<V>, startedAt: number): Entry<V> => ({
    value,
    expiresAt: startedAt + ttlMs,
    refreshAt: startedAt + ttlMs * (REFRESH_FROM + REFRESH_SPREAD * random()),
    refreshing: false,
  });
  const refresh = (key: string, entry: Entry<V>, startedAt: number): void => {
    entry.refreshing = true;
    const value = load(key, false);
    value.then(
      () => {
        // Forgotten (or replaced) while loading: what this read may predate a change, so it is not kept.
        if (cache.get(key) === entry) cache.set(key, entryOf(value, startedAt));
      },
      () => {
        entry.refreshing = false;
        entry.refreshAt = Math.min(entry.expiresAt, now() + RETRY_REFRESH_MS);
      },
    );
  };
  return {
    get(key, { fresh = false } = {}) {
      const at = now();
      const cached = cache.get(key);
      if (!fresh && cached && cached.expiresAt > at) {
        if (at >= cached.refreshAt && !cached.refreshing) refresh(key, cached, at);
        return cached.value;
      }
      const value = load(key, fresh);
      cache.set(key, entryOf(value, at));
      value.catch(() => {
        if (cache.get(key)?.value === value) cache.delete(key);
      });
      if (cache.size > maxEntries) cache.delete(cache.keys().next().value as string);
      return value;
    },
    forget(key) {
      cache.delete(key);
    },
    forgetAll() {
      cache.clear();
    },
  };
}
