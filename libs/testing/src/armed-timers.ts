import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

/** This module's own frames (the wrapper) are not where a timer was armed. */
const thisFile = `${fileURLToPath(import.meta.url)}:`;

/**
 * Test files share their worker's process (vitest.config.ts: `isolate: false`), so a timer one file leaves armed
 * fires while a later file runs: a 60 s body deadline left by a gateway test once threw there and failed CI with
 * every test green. This tracks the long timers our own code arms, so that the setup file
 * (armed-timers.setup.ts) can clear what a file leaves, and say so, before the next file runs.
 *
 * Only timers of at least `minDelayMs` created with one of `roots` on the stack (this repository's code, not an npm
 * package's) are tracked: a package's own timers are its to keep (undici's clock, a pool's idle timer), and short
 * ones (polls, a sleep raced against a condition) have run out before a later file has started its services.
 */
export interface ArmedTimers {
  /** Names the file whose code arms the timers from now on (its test file path). */
  enterFile(file: string): void;
  /** The long timers `file` armed and left armed, cleared (so they cannot fire later), with where each was armed. */
  takeLeftovers(file: string): LeftoverTimer[];
  /** Puts back the global functions it replaced. */
  uninstall(): void;
}

export interface LeftoverTimer {
  kind: "setTimeout" | "setInterval";
  delayMs: number;
  /** The stack frames of our code that armed it, innermost first. */
  armedAt: string[];
}

interface Tracked extends LeftoverTimer {
  file: string;
  timer: NodeJS.Timeout;
}

export function trackArmedTimers({ roots, minDelayMs }: { roots: string[]; minDelayMs: number }): ArmedTimers {
  const tracked = new Set<Tracked>();
  let currentFile = "";
  const originals = { setTimeout: globalThis.setTimeout, setInterval: globalThis.setInterval };

  const ourFrames = (): string[] =>
    (new Error().stack ?? "")
      .split("\n")
      .slice(1)
      .map((line) => line.trim())
      .filter((line) => roots.some((root) => line.includes(root)) && !line.includes("/node_modules/") && !line.includes(thisFile));

  const wrap = <F extends typeof setTimeout | typeof setInterval>(kind: Tracked["kind"], original: F): F => {
    const wrapper = function (this: unknown, ...args: Parameters<F>) {
      const timer = (original as (...a: unknown[]) => NodeJS.Timeout).apply(this, args);
      const delayMs = Number(args[1] ?? 0);
      if (delayMs >= minDelayMs) {
        const armedAt = ourFrames();
        if (armedAt.length > 0) tracked.add({ kind, delayMs, armedAt, file: currentFile, timer });
      }
      return timer;
    } as unknown as F;
    // `promisify(setTimeout)` and friends keep working through the wrapper.
    const custom = (original as unknown as Record<symbol, unknown>)[promisify.custom];
    if (custom) Object.defineProperty(wrapper, promisify.custom, { value: custom });
    return wrapper;
  };
  globalThis.setTimeout = wrap("setTimeout", originals.setTimeout);
  globalThis.setInterval = wrap("setInterval", originals.setInterval);

  // Node marks a timer destroyed once it has fired (a timeout) or been cleared, however it was cleared.
  const armed = (entry: Tracked) => !(entry.timer as unknown as { _destroyed: boolean })._destroyed;

  return {
    enterFile(file) {
      currentFile = file;
    },
    takeLeftovers(file) {
      const leftovers: LeftoverTimer[] = [];
      for (const entry of tracked) {
        if (!armed(entry)) tracked.delete(entry);
        else if (entry.file === file) {
          tracked.delete(entry);
          clearTimeout(entry.timer);
          leftovers.push({ kind: entry.kind, delayMs: entry.delayMs, armedAt: entry.armedAt });
        }
      }
      return leftovers;
    },
    uninstall() {
      globalThis.setTimeout = originals.setTimeout;
      globalThis.setInterval = originals.setInterval;
    },
  };
}

/** The warning for a file that left timers armed. */
export function describeLeftovers(file: string, leftovers: LeftoverTimer[]): string {
  const lines = leftovers.map((timer) => `  ${timer.kind}(..., ${timer.delayMs}) armed at\n${timer.armedAt.slice(0, 4).map((frame) => `      ${frame}`).join("\n")}`);
  return `${file} left ${leftovers.length} timer(s) armed after its last hook; in a shared test worker they would have fired during a later file and are cleared (close what armed them, or clear them):\n${lines.join("\n")}`;
}
