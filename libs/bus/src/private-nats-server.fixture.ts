import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { canConnectNats, ensureExecutable } from "@renderbus/testing";

/**
 * nats-servers of a test file's own, which it may stop and start again on the same port (the shared test NATS must
 * not be disturbed). `stopAll` in the file's afterAll.
 */
export function privateNatsServers(prefix: string) {
  const started: ChildProcess[] = [];
  let storeDir: string | undefined;

  /** A nats-server on `port`, with or without JetStream, once it accepts connections. */
  const start = async (port: number, jetStream: boolean): Promise<ChildProcess> => {
    storeDir ??= await mkdtemp(join(tmpdir(), prefix));
    // Installed from Debian when missing, as the test run's own NATS is.
    const natsServerPath = await ensureExecutable("nats-server", "nats-server");
    const server = spawn(natsServerPath, ["-a", "127.0.0.1", "-p", String(port), ...(jetStream ? ["-js", "-sd", storeDir] : [])], { stdio: "ignore" });
    started.push(server);
    const deadline = Date.now() + 10_000;
    while (!(await canConnectNats(`nats://127.0.0.1:${port}`, jetStream))) {
      if (Date.now() > deadline) throw new Error("nats-server did not start");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return server;
  };

  /** Kills `server` (SIGKILL: a lost node, not a clean shutdown) and waits for it to be gone. */
  const stop = async (server: ChildProcess): Promise<void> => {
    if (server.exitCode !== null || server.signalCode !== null) return;
    const exited = new Promise((resolve) => server.once("exit", resolve));
    server.kill("SIGKILL");
    await exited;
  };

  const stopAll = async (): Promise<void> => {
    await Promise.all(started.map(stop));
    if (storeDir) await rm(storeDir, { recursive: true, force: true });
  };

  return { start, stop, stopAll };
}
