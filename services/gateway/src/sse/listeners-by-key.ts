/**
 * Listeners grouped by a key (a job id): `add` returns the function that removes the listener, and a key without
 * listeners is forgotten, so open streams that end leave nothing behind.
 */
export class ListenersByKey<Value> {
  private readonly byKey = new Map<string, Set<(value: Value) => void>>();

  add(key: string, listener: (value: Value) => void): () => void {
    const set = this.byKey.get(key) ?? new Set();
    set.add(listener);
    this.byKey.set(key, set);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.byKey.delete(key);
    };
  }

  notify(key: string, value: Value): void {
    for (const listener of this.byKey.get(key) ?? []) listener(value);
  }

  /** Listeners registered right now, over every key. */
  get count(): number {
    let count = 0;
    for (const set of this.byKey.values()) count += set.size;
    return count;
  }

  clear(): void {
    this.byKey.clear();
  }
}
