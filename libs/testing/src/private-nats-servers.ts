import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { canConnectNats } from "./local-nats.js";
import { ensureExecutable, spawnServer, waitUntilReady, type SpawnedServer } from "./local-process.js";

/**
 * nats-servers of a test file's own, which it may stop and start again on the same port (the shared test NATS must
 * not be disturbed). Spawned as the test infrastructure spawns its servers (they die with the test process, and a
 * failed start shows the server's log). `stopAll` in the file's afterAll.
 */
export function privateNatsServers(prefix: string) {
  const started: SpawnedServer[] = [];
  let dir: string | undefined;

  /** A nats-server on `port`, with or without JetStream, once it accepts connections. */
  const start = async (port: number, jetStream: boolean): Promise<SpawnedServer> => {
    dir ??= await mkdtemp(join(tmpdir(), prefix));
    // Installed from Debian when missing, as the test run's own NATS is.
    const command = await ensureExecutable("nats-server", "nats-server");
    // SIGKILL to stop: a lost node, not a clean shutdown.
    const server = spawnServer({ name: "nats-server", command, args: ["-a", "127.0.0.1", "-p", String(port), ...(jetStream ? ["-js", "-sd", join(dir, "jetstream")] : [])], logFile: join(dir, "nats.log"), cwd: dir, stopSignal: "SIGKILL" });
    started.push(server);
    await waitUntilReady(server, () => canConnectNats(`nats://127.0.0.1:${port}`, jetStream), 10_000, `accept connections on port ${port}`);
    return server;
  };

  const stop = (server: SpawnedServer): Promise<void> => server.stop();

  const stopAll = async (): Promise<void> => {
    await Promise.all(started.map(stop));
    if (dir) await rm(dir, { recursive: true, force: true });
  };

  return { start, stop, stopAll };
}
