/**
 * Listeners grouped by a key (a job id): `add` returns the function that removes the listener, and a key without
 * listeners is forgotten, so open streams that end leave nothing behind.
 */
export class ListenersByKey<Value> {
  private readonly byKey = new Map<string, Set<(value: Value) => void>>();

  private total = 0;

  add(key: string, listener: (value: Value) => void): () => void {
    const set = this.byKey.get(key) ?? new Set();
    if (!set.has(listener)) this.total += 1;
    set.add(listener);
    this.byKey.set(key, set);
    return () => {
      // A set no longer in the map was cleared: its listeners are counted no more.
      if (this.byKey.get(key) !== set || !set.delete(listener)) return;
      this.total -= 1;
      if (set.size === 0) this.byKey.delete(key);
    };
  }

  notify(key: string, value: Value): void {
    for (const listener of this.byKey.get(key) ?? []) listener(value);
  }

  /** Every listener of every key. */
  notifyAll(value: Value): void {
    for (const set of [...this.byKey.values()]) for (const listener of [...set]) listener(value);
  }

  /** Listeners registered right now, over every key. */
  get count(): number {
    return this.total;
  }

  clear(): void {
    this.byKey.clear();
    this.total = 0;
  }
}
