/**
 * An outbox relay as its own process, so tests can SIGKILL it like a crashed replica and start another.
 * Env: DATABASE_URL, NATS_URL, NATS_NAMESPACE, OUTBOX_SCHEMA, RELAY_BATCH_SIZE. Prints "ready" once relaying.
 */
import { Bus } from "@renderbus/bus";
import { createDatabase } from "../database.js";
import { startOutboxRelay } from "../outbox-relay.js";

const required = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const schema = required("OUTBOX_SCHEMA");
const database = createDatabase({ url: required("DATABASE_URL"), schema, maxConnections: 2 });
const bus = await Bus.connect({ url: required("NATS_URL"), name: "outbox-relay-fixture", namespace: process.env.NATS_NAMESPACE ?? "" });
const relay = await startOutboxRelay({
  pool: database.pool,
  schema,
  bus,
  batchSize: Number(process.env.RELAY_BATCH_SIZE ?? 500),
  pollIntervalMs: 200,
});
process.stdout.write("ready\n");

process.once("SIGTERM", async () => {
  await relay.stop();
  await bus.close();
  await database.close();
  process.exit(0);
});
