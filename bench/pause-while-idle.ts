/** A process that can be paused and resumed (a replica's child process). */
export interface Pausable {
  kill(signal: "SIGSTOP" | "SIGCONT"): unknown;
}

export interface PauseWhileIdleOptions {
  /** Resolves once the system is idle; rejects when it is not within `timeoutMs`. */
  waitIdle(timeoutMs?: number): Promise<void>;
  /** How long the paused processes' leftovers take to clear on their own (their pull requests expiring). */
  settleMs: number;
  /** How long the system may take to be idle again after the pause. */
  recheckMs?: number;
  attempts?: number;
}

/**
 * Pauses `processes` (SIGSTOP) while the system is idle, and checks that it still is once `settleMs` passed. Idle
 * is seen before the pause, and a process can start work in between (a timer's sweep, a retry falling due, a relay
 * round for it): paused in the middle, it holds that work (an outbox row claimed FOR UPDATE, an event it has not
 * acked) for as long as it stays paused. Then the pause is undone and tried again. Resolves with the processes paused.
 */
export async function pauseWhileIdle(processes: Pausable[], { waitIdle, settleMs, recheckMs = 10_000, attempts = 5 }: PauseWhileIdleOptions): Promise<void> {
  if (processes.length === 0) return;
  for (let attempt = 1; ; attempt += 1) {
    await waitIdle();
    for (const process of processes) process.kill("SIGSTOP");
    await new Promise((resolve) => setTimeout(resolve, settleMs));
    try {
      await waitIdle(recheckMs);
      return;
    } catch (error) {
      for (const process of processes) process.kill("SIGCONT");
      if (attempt >= attempts) throw new Error(`the system did not stay idle with ${processes.length} process(es) paused (${attempts} tries)`, { cause: error });
    }
  }
}
