/**
 * Keeps `npm start`'s services running: a service that exits is started again after a pause that doubles while it
 * keeps failing, and each restart is printed with the last lines the service wrote, which usually say why it died.
 */

/** How restarts of a service that keeps exiting are spaced. */
export interface RestartPolicy {
  /** Pause before the first restart, and again once a run lasted `resetAfterMs`. */
  firstDelayMs: number;
  /** The pause doubles on each quick exit up to this. */
  maxDelayMs: number;
  /** A run at least this long counts as healthy: the next exit starts again from `firstDelayMs`. */
  resetAfterMs: number;
}

/** 0.5 s doubling to 10 s; back to 0.5 s after a minute up. */
export const DEFAULT_RESTART_POLICY: RestartPolicy = { firstDelayMs: 500, maxDelayMs: 10_000, resetAfterMs: 60_000 };

/**
 * The pause before the next restart: `firstDelayMs` for a first exit or one after a run of `resetAfterMs` or more,
 * else twice the previous pause, capped at `maxDelayMs`.
 */
export function nextRestartDelay(previousDelayMs: number | undefined, upForMs: number, policy: RestartPolicy = DEFAULT_RESTART_POLICY): number {
  if (previousDelayMs === undefined || upForMs >= policy.resetAfterMs) return policy.firstDelayMs;
  return Math.min(previousDelayMs * 2, policy.maxDelayMs);
}

/** The last `size` lines a process wrote, oldest first. */
export class OutputTail {
  private readonly buffer: string[] = [];

  constructor(private readonly size = 20) {}

  push(line: string): void {
    this.buffer.push(line);
    if (this.buffer.length > this.size) this.buffer.shift();
  }

  lines(): readonly string[] {
    return this.buffer;
  }
}

/** What a {@link Supervisor} needs from the system it watches. */
export interface SupervisorOptions<Name extends string> {
  /** Starts the service again; resolves once it is ready, rejects when it is not. */
  start(name: Name): Promise<void>;
  /** Kills what is left of a start that failed (e.g. a process that never became ready). */
  kill(name: Name): Promise<void>;
  pid(name: Name): number | undefined;
  /** The service's latest output lines, printed with each restart. */
  tail(name: Name): readonly string[];
  /** Receives each message (multi-line with the output tail). */
  log(message: string): void;
  policy?: RestartPolicy;
  now?: () => number;
}

/** Restarts services that exit until {@link Supervisor.stop}. */
export interface Supervisor<Name extends string> {
  /** Marks `name` as up since now: from then on its exits are restarted. */
  watch(name: Name): void;
  /** Reports that `name`'s process exited (`how`: an exit code or signal name) without being asked to. */
  exited(name: Name, how: string): void;
  /** Services that are down right now: waiting for, or in the middle of, a restart. */
  down(): Name[];
  /** Stops restarting (before stopping the services themselves); pending restarts are cancelled. */
  stop(): void;
}

interface ServiceState {
  upSince: number | undefined;
  lastDelayMs: number | undefined;
  timer: NodeJS.Timeout | undefined;
  starting: boolean;
}

/** Creates a {@link Supervisor}; nothing is restarted until a service is {@link Supervisor.watch}ed. */
export function createSupervisor<Name extends string>(options: SupervisorOptions<Name>): Supervisor<Name> {
  const policy = options.policy ?? DEFAULT_RESTART_POLICY;
  const now = options.now ?? Date.now;
  const states = new Map<Name, ServiceState>();
  let stopped = false;

  const withTail = (name: Name, message: string) => {
    const lines = options.tail(name);
    if (lines.length === 0) return `${message} (it printed nothing)`;
    return [`${message}; its last ${lines.length} lines:`, ...lines.map((line) => `    ${line}`)].join('\n');
  };

  const schedule = (name: Name, state: ServiceState, delayMs: number) => {
    state.timer = setTimeout(() => {
      state.timer = undefined;
      if (stopped) return;
      state.starting = true;
      options.start(name).then(
        () => {
          state.starting = false;
          state.upSince = now();
          if (!stopped) options.log(`${name} restarted (pid ${options.pid(name) ?? '?'})`);
        },
        async (error: unknown) => {
          await options.kill(name).catch(() => undefined);
          state.starting = false;
          if (stopped) return;
          const delay = nextRestartDelay(state.lastDelayMs, 0, policy);
          state.lastDelayMs = delay;
          options.log(withTail(name, `${name} did not start (${(error as Error).message}); next try in ${seconds(delay)}`));
          schedule(name, state, delay);
        },
      );
    }, delayMs);
  };

  return {
    watch(name) {
      states.set(name, { upSince: now(), lastDelayMs: undefined, timer: undefined, starting: false });
    },
    exited(name, how) {
      const state = states.get(name);
      // Not watched yet (start-up fails on its own), or a restart in progress, whose failure is handled there.
      if (stopped || state === undefined || state.starting || state.upSince === undefined) return;
      const upFor = now() - state.upSince;
      const delay = nextRestartDelay(state.lastDelayMs, upFor, policy);
      state.upSince = undefined;
      state.lastDelayMs = delay;
      options.log(withTail(name, `${name} exited (${how}) after ${seconds(upFor)} up; restarting in ${seconds(delay)}`));
      schedule(name, state, delay);
    },
    down() {
      return [...states].filter(([, state]) => state.upSince === undefined).map(([name]) => name);
    },
    stop() {
      stopped = true;
      for (const state of states.values()) clearTimeout(state.timer);
    },
  };
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
}
