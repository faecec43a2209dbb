import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "@renderbus/testing";
import { startWebhookReceiver, type WebhookReceiver } from "../receiver.js";
import { startPeerSender } from "./peer-sender.js";
import type { PeerKind } from "./peer-child.js";

const SCHEMAS: Record<PeerKind, string> = { "graphile-worker": "peer_graphile_worker", "pg-boss": "peer_pg_boss" };

/** The benchmark's peer senders really deliver, record every attempt and keep a failed webhook for its retry. */
describe.each<PeerKind>(["graphile-worker", "pg-boss"])("peer sender on %s", (kind) => {
  let databaseUrl: string;
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    databaseUrl = await createTestDatabase(`peer${kind}`);
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it("delivers every webhook once, signed, with an attempt row each; a failed attempt is recorded and kept for a retry", async () => {
    const peer = await startPeerSender({ kind, databaseUrl, concurrency: 64, poolSize: 10, secret: "whsec_dGVzdA==" });
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      await peer.burst(300, "job_peertest", receiver.url);
      await receiver.waitFor((r) => !!r.body.jobId?.startsWith("job_peertest"), 300, 120_000);
      await peer.drain();
      const firsts = receiver.received.filter((r) => r.attempt === 1 && r.event === "job.running");
      expect(new Set(firsts.map((r) => r.body.jobId)).size).toBe(300);
      const { rows } = await db.query<{ count: number; ok: number }>(`select count(*)::int as count, count(*) filter (where response_status = 200)::int as ok from ${SCHEMAS[kind]}.attempts`);
      expect(rows[0]).toEqual({ count: 300, ok: 300 });

      // Nothing listens on port 9 of loopback: the attempt fails, is recorded, and the job waits for its retry.
      await peer.burst(1, "job_peerfail", "http://127.0.0.1:9/hook");
      await expect.poll(async () => (await db.query<{ count: number }>(`select count(*)::int as count from ${SCHEMAS[kind]}.attempts where error is not null`)).rows[0]!.count, { timeout: 30_000 }).toBe(1);
    } finally {
      await db.end();
      await peer.stop();
    }
  }, 180_000);
});
