import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import type { PeerCommand, PeerConfig, PeerKind } from "./peer-child.js";

const repoRoot = join(import.meta.dirname, "..", "..");

/** A peer webhook sender running in its own process (so its CPU is its own: /proc/<pid>/stat). */
export interface PeerSender {
  kind: PeerKind;
  pid: number;
  /** Enqueues `count` webhooks (jobIds `${prefix}${n}`) to `url`; resolves once every job is committed. */
  burst(count: number, prefix: string, url: string): Promise<void>;
  /** Resolves once the peer's queue holds no job (every attempt recorded, every job settled). */
  drain(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts a peer (bench/peers/peer-child.ts) under Node with tsx's loader (`node --import tsx`: one process, no
 * launcher in between) and waits for it to be ready (schema migrated, workers polling).
 */
export async function startPeerSender(config: PeerConfig): Promise<PeerSender> {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", join(repoRoot, "bench", "peers", "peer-child.ts"), JSON.stringify(config)], {
    cwd: repoRoot,
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  let output = "";
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);

  const next = (type: string, timeoutMs: number) =>
    new Promise<void>((resolve, reject) => {
      const onMessage = (message: { type?: string }) => {
        if (message.type !== type) return;
        cleanup();
        resolve();
      };
      const onExit = (code: number | null) => {
        cleanup();
        reject(new Error(`peer ${config.kind} exited (code ${code}) waiting for ${type}: ${output.slice(-2000)}`));
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`peer ${config.kind}: no ${type} within ${timeoutMs} ms: ${output.slice(-2000)}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        child.off("message", onMessage);
        child.off("exit", onExit);
      };
      child.on("message", onMessage);
      child.once("exit", onExit);
    });
  const command = (message: PeerCommand) => child.send(message);

  try {
    await next("ready", 120_000);
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  return {
    kind: config.kind,
    pid: child.pid!,
    async burst(count, prefix, url) {
      const enqueued = next("enqueued", 120_000);
      command({ type: "burst", count, prefix, url });
      await enqueued;
    },
    async drain() {
      const drained = next("drained", 180_000);
      command({ type: "drain" });
      await drained;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
        child.once("exit", () => {
          clearTimeout(timer);
          resolve();
        });
        command({ type: "stop" });
      }),
  };
}
