import { execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { cpus, totalmem, release } from "node:os";

/** The machine and versions a run was measured on. */
export interface MachineInfo {
  cpuModel: string;
  cores: number;
  memoryGb: number;
  kernel: string;
  node: string;
  postgres: string;
  nats: string;
  redis: string;
  autocannon: string;
}

const tryRun = (command: string, args: string[]): string => {
  try {
    return execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "unknown";
  }
};

export function machineInfo(versions: { postgres: string; nats: string }): MachineInfo {
  const autocannonPackage = createRequire(import.meta.url)("autocannon/package.json") as { version: string };
  return {
    cpuModel: cpus()[0]?.model ?? "unknown",
    cores: cpus().length,
    memoryGb: Math.round(totalmem() / 1024 ** 3),
    kernel: release(),
    node: process.version,
    postgres: versions.postgres,
    nats: versions.nats,
    redis: /v=([\d.]+)/.exec(tryRun("redis-server", ["--version"]))?.[1] ?? "unknown",
    autocannon: autocannonPackage.version,
  };
}
