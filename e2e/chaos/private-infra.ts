import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { canConnectNats, canQueryPostgres, localNatsConfig, localNatsUrl, natsConnectOptions, startLocalPostgres, type LocalServer } from "@renderbus/testing";
import { getFreePort, lookupUser, spawnServer, waitUntilReady, type SpawnedServer } from "../../libs/testing/src/local-process.js";

/**
 * PostgreSQL and NATS servers private to one chaos run, on fixed ports so they can be stopped and started again
 * under the services' feet. The shared test servers are never touched.
 */

const NATS_SERVER = existsSync("/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : "nats-server";

/**
 * One JetStream server (or one node of a cluster) that can be killed and started again with the same store. It runs
 * the config `npm test` runs (libs/testing/src/local-nats.ts): every service connects as its own user, with only its
 * permissions, through faults and failovers too.
 */
export class NatsNode {
  private server: SpawnedServer | undefined;
  constructor(
    readonly name: string,
    readonly port: number,
    private readonly args: string[],
    private readonly dir: string,
  ) {}

  /** With the dev superuser's credentials (startSystem gives each service its own user instead). */
  get url(): string {
    return localNatsUrl(this.port);
  }

  async start(): Promise<void> {
    this.server = spawnServer({ name: this.name, command: NATS_SERVER, args: this.args, logFile: join(this.dir, `${this.name}.log`), cwd: this.dir, stopSignal: "SIGTERM" });
    await waitUntilReady(this.server, () => canConnectNats(this.url), 30_000, `${this.name} on port ${this.port}`);
  }

  /** SIGTERM (a clean restart) or SIGKILL (a crash). */
  async stop(signal: "SIGTERM" | "SIGKILL" = "SIGTERM"): Promise<void> {
    if (!this.server) return;
    if (signal === "SIGKILL") process.kill(this.server.pid, "SIGKILL");
    await this.server.stop(10_000);
    this.server = undefined;
  }
}

/** A single JetStream server. */
export async function startPrivateNats(): Promise<{ nodes: NatsNode[]; url: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "rb-chaos-nats-"));
  const port = await getFreePort();
  const node = new NatsNode("nats", port, ["-c", writeNatsConfig(dir, "nats", port, join(dir, "js"))], dir);
  await node.start();
  return { nodes: [node], url: node.url, stop: () => node.stop() };
}

/** Three JetStream nodes clustered on loopback; clients given node 0's URL learn the others from the cluster. */
export async function startPrivateNatsCluster(): Promise<{ nodes: NatsNode[]; url: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "rb-chaos-natscluster-"));
  const ports = await Promise.all([0, 1, 2].map(() => getFreePort()));
  const clusterPorts = await Promise.all([0, 1, 2].map(() => getFreePort()));
  const routes = clusterPorts.map((port) => `nats://127.0.0.1:${port}`).join(",");
  const nodes = [0, 1, 2].map((index) => {
    const store = join(dir, `n${index}`);
    mkdirSync(store, { recursive: true });
    // Command-line flags add the cluster to the config file's listener, store and users.
    return new NatsNode(`nats-${index}`, ports[index]!, [
      "-c", writeNatsConfig(dir, `nats-${index}`, ports[index]!, store), "-n", `rb-chaos-${index}`,
      "--cluster_name", "rbchaos", "--cluster", `nats://127.0.0.1:${clusterPorts[index]}`, "--routes", routes,
    ], dir);
  });
  // The nodes wait for each other (JetStream needs a meta leader), so start them together.
  await Promise.all(nodes.map((node) => node.start()));
  await waitForJetStream(nodes[0]!.url);
  return { nodes, url: nodes[0]!.url, stop: async () => void (await Promise.all(nodes.map((node) => node.stop()))) };
}

/** Writes a node's config (users and permissions of nats-permissions.ts) and returns its path. */
function writeNatsConfig(dir: string, name: string, port: number, store: string): string {
  const file = join(dir, `${name}.conf`);
  writeFileSync(file, localNatsConfig(port, store), { mode: 0o600 });
  return file;
}

/** A JetStream cluster answers account info only once it has a meta leader. */
async function waitForJetStream(url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (await canConnectNats(url, true)) {
      const { connect } = await import("@nats-io/transport-node");
      const { jetstreamManager } = await import("@nats-io/jetstream");
      const connection = await connect({ ...natsConnectOptions(url), timeout: 2000 });
      try {
        await (await jetstreamManager(connection)).getAccountInfo();
        return;
      } catch {
        // no meta leader yet
      } finally {
        await connection.close();
      }
    }
    await new Promise((done) => setTimeout(done, 500));
  }
  throw new Error(`JetStream cluster at ${url} did not elect a leader`);
}

/** A private PostgreSQL whose restart keeps its port (services keep their DATABASE_URL). */
export async function startPrivatePostgres(log: (line: string) => void = () => undefined) {
  const dir = mkdtempSync(join(tmpdir(), "rb-chaos-pg-"));
  // mkdtemp makes it 0700; the postgres OS user must be able to enter it.
  chmodSync(dir, 0o755);
  // Spawned first by the shared helper (initdb, ownership, binaries); restarts use the same cluster and port.
  let first: LocalServer | undefined = await startLocalPostgres({ dir, persistent: false, log });
  const port = Number(new URL(first.url).port);
  let restarted: SpawnedServer | undefined;
  const runAs = process.getuid?.() === 0 ? await lookupUser("postgres") : undefined;
  const major = readdirSync("/usr/lib/postgresql").sort((a, b) => Number(b) - Number(a))[0];
  const stopCurrent = async () => {
    if (first) await first.stop();
    first = undefined;
    if (restarted) await restarted.stop(15_000);
    restarted = undefined;
  };
  return {
    url: first.url,
    async createDatabase(name: string): Promise<string> {
      const admin = new pg.Client({ connectionString: this.url });
      await admin.connect();
      try {
        await admin.query(`create database ${name}`);
      } finally {
        await admin.end();
      }
      const url = new URL(this.url);
      url.pathname = `/${name}`;
      return url.toString();
    },
    /** Fast shutdown (clients are disconnected), then the same cluster on the same port. */
    async restart(): Promise<void> {
      await stopCurrent();
      restarted = spawnServer({
        name: "postgres",
        command: `/usr/lib/postgresql/${major}/bin/postgres`,
        args: ["-D", join(dir, "data"), "-p", String(port), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "max_connections=300", "-c", "fsync=off", "-c", "synchronous_commit=off"],
        logFile: join(dir, "postgres.log"),
        cwd: dir,
        stopSignal: "SIGINT",
        ...(runAs ? { runAs } : {}),
        env: { ...process.env, LC_ALL: "C", LANG: "C" },
      });
      await waitUntilReady(restarted, () => canQueryPostgres(this.url), 60_000, "postgres after restart");
    },
    stop: stopCurrent,
  };
}
