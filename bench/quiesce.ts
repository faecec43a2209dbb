import type { Bus, StreamSpec } from "@renderbus/bus";
import pg from "pg";

/**
 * Waits until the system has finished the work of the previous measurement: every JetStream consumer of `streams`
 * has nothing pending or unacked, and the services' outboxes are empty. A burst of 5,000 deliveries leaves
 * the jobs service projecting their `deliveries.updated` events for a while after the last one reached the receiver;
 * a measurement started during that tail shares the cores with it, and how much of it overlapped moved a latency
 * p99 between runs.
 */
export async function quiesce(bus: Bus, databaseUrl: string, streams: StreamSpec[], { timeoutMs = 60_000, pollMs = 100 } = {}): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      const busy = [...(await unfinishedConsumers(bus, streams)), ...(await nonEmptyOutboxes(client))];
      if (busy.length === 0) return;
      if (Date.now() > deadline) throw new Error(`system still busy after ${timeoutMs} ms: ${busy.join(", ")}`);
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  } finally {
    await client.end();
  }
}

async function unfinishedConsumers(bus: Bus, streams: StreamSpec[]): Promise<string[]> {
  const busy: string[] = [];
  for (const spec of streams) {
    const stream = bus.streamName(spec);
    for await (const info of bus.jsm.consumers.list(stream)) {
      if (info.num_pending > 0 || info.num_ack_pending > 0) busy.push(`${stream}/${info.name} (${info.num_pending + info.num_ack_pending})`);
    }
  }
  return busy;
}

async function nonEmptyOutboxes(client: pg.Client): Promise<string[]> {
  const { rows } = await client.query<{ schema: string }>("select table_schema as schema from information_schema.tables where table_name = 'outbox'");
  const busy: string[] = [];
  for (const { schema } of rows) {
    const { rows: counts } = await client.query<{ count: number }>(`select count(*)::int as count from ${client.escapeIdentifier(schema)}.outbox`);
    if (counts[0]!.count > 0) busy.push(`${schema}.outbox (${counts[0]!.count})`);
  }
  return busy;
}
