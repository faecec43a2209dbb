/**
 * Group commit: items submitted while a batch is being written wait and go together in the next batch, so under load
 * N items cost one transaction (one WAL flush, a handful of round trips) instead of N, and an item submitted on an idle
 * system is written at once, with no timer delay. The same idea as PostgreSQL's own commit_delay, one level up.
 *
 * `write` gets the items in submission order and returns one result per item, in the same order. When a batch of
 * several items fails, each item is written again on its own, so one bad item fails only its own caller.
 */
export class GroupCommit<Item, Result> {
  private queue: Array<{ item: Item; resolve(result: Result): void; reject(error: unknown): void }> = [];
  private draining = false;

  constructor(
    private readonly write: (items: Item[]) => Promise<Result[]>,
    private readonly maxBatch = 128,
  ) {}

  /** Resolves with the item's result once the batch holding it committed. */
  submit(item: Item): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (!this.draining) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.draining = true;
    // Let the callers woken in the same turn of the event loop join the first batch.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        const results = await this.write(batch.map((entry) => entry.item));
        batch.forEach((entry, index) => entry.resolve(results[index] as Result));
      } catch (error) {
        if (batch.length === 1) {
          batch[0]!.reject(error);
          continue;
        }
        for (const entry of batch) {
          await this.write([entry.item]).then(
            (results) => entry.resolve(results[0] as Result),
            (single: unknown) => entry.reject(single),
          );
        }
      }
    }
    this.draining = false;
  }
}
