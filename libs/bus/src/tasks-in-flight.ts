/**
 * Messages being handled by one consumer (all of its durables), bounded by its concurrency. A loop waits for a free
 * slot with {@link whileFull}; each settled task wakes every waiting loop, which checks again.
 *
 * Replaces `while (set.size >= limit) await Promise.race(set)`: a race attaches a reaction to every task in flight,
 * so under a full consumer each message cost `concurrency` reactions (64 per message in the dispatcher's bursts), and
 * they pile up on the long-lived ones. Every loop is woken, not just one: a woken loop whose subject has no next
 * message would otherwise keep a free slot from the loops still waiting.
 */
export class TasksInFlight {
  private readonly tasks = new Set<Promise<void>>();
  private waiting: Array<() => void> = [];

  get size(): number {
    return this.tasks.size;
  }

  add(task: Promise<void>): void {
    this.tasks.add(task);
    const settled = () => {
      this.tasks.delete(task);
      const woken = this.waiting;
      this.waiting = [];
      for (const wake of woken) wake();
    };
    task.then(settled, settled);
  }

  async whileFull(limit: number): Promise<void> {
    while (this.tasks.size >= limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Resolves once every task added so far has settled. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.tasks]);
  }
}
