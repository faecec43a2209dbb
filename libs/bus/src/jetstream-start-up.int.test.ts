import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { canConnectNats, ensureExecutable, getFreePort } from "@renderbus/testing";
import { Bus } from "./bus.js";

const started: ChildProcess[] = [];
let storeDir: string | undefined;

/** A private nats-server on `port`, with or without JetStream, once it accepts connections. */
async function natsServer(port: number, jetStream: boolean): Promise<ChildProcess> {
  storeDir ??= await mkdtemp(join(tmpdir(), "rb-js-start-up-"));
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
}

async function stopped(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  const exited = new Promise((resolve) => server.once("exit", resolve));
  server.kill("SIGKILL");
  await exited;
}

afterAll(async () => {
  await Promise.all(started.map(stopped));
  if (storeDir) await rm(storeDir, { recursive: true, force: true });
});

describe("a service starting while JetStream does not answer yet", () => {
  it("connects and declares its streams once JetStream is up, instead of failing its start-up", async () => {
    const port = await getFreePort();
    // A server whose JetStream is not up: the API has no responder, as on a cluster still forming.
    const early = await natsServer(port, false);
    const connecting = Bus.connect({ url: `nats://127.0.0.1:${port}`, name: "js-start-up-test" }).then(async (bus) => {
      await bus.ensureStreams([{ name: "START_UP_TEST", subjects: ["startup.>"], duplicateWindowMs: 60_000 }]);
      return bus;
    });
    let settled = false;
    void connecting.then(
      () => (settled = true),
      () => (settled = true),
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(settled).toBe(false);

    await stopped(early);
    await natsServer(port, true);
    const bus = await connecting;
    try {
      expect((await bus.jsm.streams.info("START_UP_TEST")).config.subjects).toEqual(["startup.>"]);
    } finally {
      await bus.close();
    }
  });
});
