import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { canConnectNats, canQueryPostgres, localNatsConfig, localNatsUrl, natsConnectOptions, startLocalPostgres, type LocalServer } from "@renderbus/testing";
import { lookupUser, spawnServer, waitUntilReady, type SpawnedServer } from "../../libs/testing/src/local-process.js";
import { startRouteRelay } from "./route-relay.js";

/**
 * PostgreSQL and NATS servers private to one chaos run, each keeping its ports across restarts so it can be stopped
 * and started again under the services' feet. The shared test servers are never touched.
 */

const NATS_SERVER = existsSync("/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : "nats-server";

/** The ports a node listens on: picked by the OS at its first start, kept across restarts. */
interface NodePorts {
  client: number;
  cluster?: number;
}

/**
 * One JetStream server (or one node of a cluster) that can be killed and started again with the same store. It runs
 * the config `npm test` runs (libs/testing/src/local-nats.ts): every service connects as its own user, with only its
 * permissions, through faults and failovers too.
 *
 * Ports are picked by nats-server itself (`-1`, read back from its ports file), so no other process can take them
 * between picking and binding; a restart asks for the same ones, so clients and routes find the node again.
 */
export class NatsNode {
  private server: SpawnedServer | undefined;
  private ports: NodePorts | undefined;
  constructor(
    readonly name: string,
    /** Command-line arguments beside the config file, given the route port to listen on (`-1` for "any"). */
    private readonly argsFor: (clusterPort: number) => string[],
    private readonly dir: string,
    private readonly clustered: boolean,
  ) {}

  get clientPort(): number {
    if (!this.ports) throw new Error(`${this.name} has not started yet`);
    return this.ports.client;
  }

  /** The node's own route listener (undefined before its first start, or for a single server). */
  get clusterPort(): number | undefined {
    return this.ports?.cluster;
  }

  /** With the dev superuser's credentials (startSystem gives each service its own user instead). */
  get url(): string {
    return localNatsUrl(this.clientPort);
  }

  /** Starts the server and waits until it listens (`waitForClients` waits until it also accepts a connection). */
  async start(): Promise<void> {
    const portsDir = join(this.dir, `${this.name}-ports`);
    mkdirSync(portsDir, { recursive: true });
    const config = writeNatsConfig(this.dir, this.name, this.ports?.client ?? -1, join(this.dir, `${this.name}-store`));
    this.server = spawnServer({
      name: this.name,
      command: NATS_SERVER,
      args: ["-c", config, "--ports_file_dir", portsDir, ...this.argsFor(this.ports?.cluster ?? -1)],
      logFile: join(this.dir, `${this.name}.log`),
      cwd: this.dir,
      stopSignal: "SIGTERM",
    });
    const server = this.server;
    await waitUntilReady(server, async () => (this.ports = readPortsFile(portsDir, server.pid, this.clustered)) !== undefined, 30_000, `${this.name}'s ports file`);
  }

  /** Resolves once a client can connect (a clustered node accepts clients only once it has routes). */
  async waitForClients(): Promise<void> {
    if (!this.server) throw new Error(`${this.name} is not running`);
    await waitUntilReady(this.server, () => canConnectNats(this.url), 30_000, `${this.name} on port ${this.clientPort}`);
  }

  /** SIGTERM (a clean restart) or SIGKILL (a crash). */
  async stop(signal: "SIGTERM" | "SIGKILL" = "SIGTERM"): Promise<void> {
    if (!this.server) return;
    if (signal === "SIGKILL") process.kill(this.server.pid, "SIGKILL");
    await this.server.stop(10_000);
    this.server = undefined;
  }
}

/** nats-server writes `<executable>_<pid>.ports` once it listens: `{"nats": [urls], "cluster": [urls]}`. */
function readPortsFile(dir: string, pid: number, clustered: boolean): NodePorts | undefined {
  const file = readdirSync(dir).find((name) => name.endsWith(`_${pid}.ports`));
  if (!file) return undefined;
  try {
    const listeners = JSON.parse(readFileSync(join(dir, file), "utf8")) as { nats?: string[]; cluster?: string[] };
    const portOf = (urls: string[] | undefined) => {
      const url = urls?.find((candidate) => candidate.includes("127.0.0.1"));
      return url ? Number(new URL(url).port) : undefined;
    };
    const client = portOf(listeners.nats);
    const cluster = portOf(listeners.cluster);
    if (client === undefined || (clustered && cluster === undefined)) return undefined;
    return cluster === undefined ? { client } : { client, cluster };
  } catch {
    // written but not complete yet
    return undefined;
  }
}

/** A single JetStream server. */
export async function startPrivateNats(): Promise<{ nodes: NatsNode[]; url: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), "rb-chaos-nats-"));
  const node = new NatsNode("nats", () => [], dir, false);
  await node.start();
  await node.waitForClients();
  return { nodes: [node], url: node.url, stop: () => node.stop() };
}

/** A 3-node cluster whose links can be cut: `partition(node)` isolates one node from the other two. */
export interface PrivateNatsCluster {
  nodes: NatsNode[];
  url: string;
  /** Cuts every route to and from `node` (the node and its clients stay up) until `heal()`. */
  partition(node: NatsNode): void;
  heal(): void;
  stop(): Promise<void>;
}

/**
 * Three JetStream nodes clustered on loopback; clients given node 0's URL learn the others from the cluster. Every
 * route goes through a relay (one per direction, route-relay.ts), and nodes advertise an address nobody listens on
 * so they never open a direct route around the relays.
 */
export async function startPrivateNatsCluster(): Promise<PrivateNatsCluster> {
  const dir = mkdtempSync(join(tmpdir(), "rb-chaos-natscluster-"));
  const indexes = [0, 1, 2];
  const nodes: NatsNode[] = [];
  // relays[from][to]: node `from` dials node `to` through it.
  const relays = await Promise.all(indexes.map((from) => Promise.all(indexes.map((to) => (from === to ? undefined : startRouteRelay(() => nodes[to]?.clusterPort))))));
  for (const index of indexes) {
    const routes = indexes.filter((to) => to !== index).map((to) => `nats://127.0.0.1:${relays[index]![to]!.port}`).join(",");
    nodes.push(
      new NatsNode(
        `nats-${index}`,
        (clusterPort) => ["-n", `rb-chaos-${index}`, "--cluster_name", "rbchaos", "--cluster", `nats://127.0.0.1:${clusterPort}`, "--routes", routes, "--cluster_advertise", "127.0.0.1:9"],
        dir,
        true,
      ),
    );
  }
  // The nodes wait for each other (JetStream needs a meta leader), so start them together.
  await Promise.all(nodes.map((node) => node.start()));
  await Promise.all(nodes.map((node) => node.waitForClients()));
  await waitForJetStream(nodes[0]!.url);
  const links = (index: number) => indexes.flatMap((other) => (other === index ? [] : [relays[index]![other]!, relays[other]![index]!]));
  return {
    nodes,
    url: nodes[0]!.url,
    partition(node) {
      for (const relay of links(nodes.indexOf(node))) relay.block();
    },
    heal() {
      for (const row of relays) for (const relay of row) relay?.unblock();
    },
    stop: async () => {
      await Promise.all(nodes.map((node) => node.stop()));
      await Promise.all(relays.flat().map((relay) => relay?.close()));
    },
  };
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
