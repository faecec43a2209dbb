import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { defaultServiceRuntime, serviceCommand, type ServiceName, type ServiceRuntime } from "@renderbus/testing";

const repoRoot = join(import.meta.dirname, "..");

/** A port free on loopback right now. */
function getFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** An extra replica of a service, started beside a running system. */
export interface Replica {
  child: ChildProcess;
  /** The service's environment as started (ports included). */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * Starts another process of `service` with the system's environment (same database, NATS namespace, auth address),
 * on its own ports so it does not collide with the first replica. Waits until it answers (gRPC health or /healthz).
 */
export async function startReplica(
  service: ServiceName,
  env: Record<string, string>,
  { extraEnv = {}, nodeArgs, runtime = defaultServiceRuntime() }: { extraEnv?: Record<string, string>; nodeArgs?: string[]; runtime?: ServiceRuntime } = {},
): Promise<Replica> {
  const ports: Record<string, string> = {};
  if (service === "webhook-dispatcher") ports.WEBHOOKS_GRPC_PORT = String(await getFreePort());
  if (service === "jobs") ports.JOBS_GRPC_PORT = String(await getFreePort());
  // Its own metrics port too: the first gateway holds GATEWAY_METRICS_PORT.
  if (service === "gateway") Object.assign(ports, { GATEWAY_PORT: String(await getFreePort()), GATEWAY_METRICS_PORT: String(await getFreePort()) });
  if (service === "auth") Object.assign(ports, { AUTH_GRPC_PORT: String(await getFreePort()), AUTH_HTTP_PORT: String(await getFreePort()) });
  const { command, args } = serviceCommand(repoRoot, service, runtime, nodeArgs);
  const child = spawn(command, args, {
    cwd: repoRoot,
    env: { ...process.env, ...env, ...ports, ...extraEnv },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  const all = { ...env, ...ports, ...extraEnv };
  // Readiness by probe, not by log line: a replica may run with LOG_LEVEL=warn.
  const ready = async (): Promise<boolean> => {
    const { isRpcServing } = await import("@renderbus/rpc");
    switch (service) {
      case "gateway":
        return fetch(`http://127.0.0.1:${all.GATEWAY_PORT}/healthz`).then((r) => r.ok, () => false);
      case "jobs":
        return isRpcServing(`127.0.0.1:${all.JOBS_GRPC_PORT}`);
      case "webhook-dispatcher":
        return isRpcServing(`127.0.0.1:${all.WEBHOOKS_GRPC_PORT}`);
      case "auth":
        return isRpcServing(`127.0.0.1:${all.AUTH_GRPC_PORT}`);
      case "worker":
        return true;
    }
  };
  const deadline = Date.now() + 90_000;
  while (!(await ready())) {
    if (child.exitCode !== null) throw new Error(`${service} replica exited with code ${child.exitCode}: ${output.slice(-1000)}`);
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`${service} replica did not become ready within 90 s: ${output.slice(-1000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    child,
    env: all,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
        child.once("exit", () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill("SIGTERM");
      }),
  };
}
