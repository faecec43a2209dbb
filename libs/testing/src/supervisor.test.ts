import { describe, expect, it } from 'vitest';
import { createSupervisor, nextRestartDelay, OutputTail, type RestartPolicy } from './supervisor.js';

const quick: RestartPolicy = { firstDelayMs: 10, maxDelayMs: 40, resetAfterMs: 60_000 };

function waitFor(condition: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const poll = () => {
      if (condition()) return resolve();
      if (Date.now() > deadline) return reject(new Error('timed out'));
      setTimeout(poll, 5);
    };
    poll();
  });
}

describe('nextRestartDelay', () => {
  it('waits 0.5 s, doubling on each quick exit up to 10 s, and starts over after a minute up', () => {
    const delays: number[] = [];
    let previous: number | undefined;
    for (let exit = 0; exit < 7; exit += 1) delays.push((previous = nextRestartDelay(previous, 1_000)));

    expect(delays).toEqual([500, 1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
    expect(nextRestartDelay(10_000, 60_000)).toBe(500);
  });
});

describe('OutputTail', () => {
  it('keeps the last lines only, oldest first', () => {
    const tail = new OutputTail(3);
    for (const line of ['a', 'b', 'c', 'd', 'e']) tail.push(line);

    expect(tail.lines()).toEqual(['c', 'd', 'e']);
  });
});

describe('createSupervisor', () => {
  it('restarts a watched service that exits, printing why with its last output lines', async () => {
    const messages: string[] = [];
    const starts: string[] = [];
    const supervisor = createSupervisor<'worker'>({
      start: async (name) => void starts.push(name),
      kill: async () => undefined,
      pid: () => 4242,
      tail: () => ['connecting', 'FATAL: out of memory'],
      log: (message) => messages.push(message),
      policy: quick,
    });
    supervisor.watch('worker');

    supervisor.exited('worker', 'SIGKILL');
    expect(supervisor.down()).toEqual(['worker']);
    await waitFor(() => messages.length === 2);

    expect(starts).toEqual(['worker']);
    expect(messages[0]).toMatch(/^worker exited \(SIGKILL\) after .* up; restarting in 0\.0 s; its last 2 lines:\n {4}connecting\n {4}FATAL: out of memory$/);
    expect(messages[1]).toBe('worker restarted (pid 4242)');
    expect(supervisor.down()).toEqual([]);
    supervisor.stop();
  });

  it('tries again with a doubled pause while the service does not start, killing what the failed start left', async () => {
    const messages: string[] = [];
    let attempts = 0;
    let kills = 0;
    const supervisor = createSupervisor<'jobs'>({
      start: async () => {
        attempts += 1;
        if (attempts < 3) throw new Error('jobs exited with code 1 during start-up');
      },
      kill: async () => void (kills += 1),
      pid: () => 7,
      tail: () => [],
      log: (message) => messages.push(message),
      policy: quick,
    });
    supervisor.watch('jobs');

    supervisor.exited('jobs', 'code 1');
    await waitFor(() => messages.at(-1) === 'jobs restarted (pid 7)');

    expect(attempts).toBe(3);
    expect(kills).toBe(2);
    expect(messages.slice(1, 3)).toEqual([
      'jobs did not start (jobs exited with code 1 during start-up); next try in 0.0 s (it printed nothing)',
      'jobs did not start (jobs exited with code 1 during start-up); next try in 0.0 s (it printed nothing)',
    ]);
    supervisor.stop();
  });

  it('restarts nothing that is not watched yet, nor anything once stopped', async () => {
    let starts = 0;
    const supervisor = createSupervisor<'auth'>({
      start: async () => void (starts += 1),
      kill: async () => undefined,
      pid: () => undefined,
      tail: () => [],
      log: () => undefined,
      policy: quick,
    });

    supervisor.exited('auth', 'code 1');
    supervisor.watch('auth');
    supervisor.exited('auth', 'code 1');
    supervisor.stop();
    await new Promise((resolve) => setTimeout(resolve, 50));

    expect(starts).toBe(0);
  });
});
