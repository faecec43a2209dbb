import type { FastifyInstance } from "fastify";
import type { jobEvents, webhooks } from "@renderbus/contracts";
import { batchCompletedPayload, jobCompletedPayload, jobFailedPayload, jobRunningPayload, webhookTestPayload } from "@renderbus/webhook-payloads";
import { planLimit } from "@renderbus/errors";
import type { AuthContext } from "@renderbus/rpc";
import type { GatewayDeps } from "../deps.js";
import { serveEventStream } from "./event-stream.js";
import { openStreamsOf } from "./open-streams.js";

/** One webhook as `renderbus webhooks listen` receives it: `body` is the exact JSON text a delivery would POST. */
export interface StreamedWebhook {
  /** Stable per event (`job.completed:job_...`), or the `del_` id for test events; receivers dedupe on it. */
  id: string;
  event: string;
  body: string;
}

/**
 * `GET /webhooks/events/stream`: Server-Sent Events carrying every webhook payload of the caller's org as it
 * happens (event name `webhook`, data = {@link StreamedWebhook}), so a developer can receive deliveries on a laptop
 * without a public URL, like `stripe listen`. Works whether or not the org has a webhookUrl configured; requires a
 * plan with webhooks.
 *
 * The gateway has no access to the dispatcher's delivery rows, so it builds the payloads from the same events the
 * dispatcher consumes (job events, batch completions, test deliveries) with the same builders
 * (@renderbus/webhook-payloads), which makes the bytes equal to what the dispatcher signs. Each open stream holds its own core NATS
 * subscriptions: this is a developer tool with few concurrent listeners, unlike job SSE (see JobEventHub), and each
 * org may hold at most `SSE_MAX_STREAMS_PER_ORG` streams. The stream ends when its credential is revoked or its plan
 * loses webhooks (see {@link serveEventStream}).
 */
export function registerWebhookEventStream(app: FastifyInstance, deps: GatewayDeps): void {
  const streams = openStreamsOf(app, deps);
  // Checked when the stream opens and again on every credential recheck: a downgrade ends an open stream.
  const assertPlanHasWebhooks = (auth: AuthContext) => {
    const plan = deps.plans[auth.plan as keyof typeof deps.plans];
    if (!plan?.webhooks) throw planLimit(`Webhooks are not included in the ${auth.plan} plan`);
  };
  app.get("/webhooks/events/stream", async (request, reply) => {
    await serveEventStream(streams, request, reply, {
      kind: "webhook",
      prepare: assertPlanHasWebhooks,
      revalidate: assertPlanHasWebhooks,
      start: async (stream) => {
        const orgId = stream.orgId;
        const send = (webhook: StreamedWebhook | undefined) => {
          if (webhook) stream.send("webhook", webhook, webhook.id);
        };
        stream.hold(
          deps.bus.listen<{ orgId?: string }>("jobs.events.job.*", (data, subject) => {
            if (data?.orgId === orgId) send(webhookForJobEvent(subject, data));
          }),
        );
        stream.hold(
          deps.bus.listen<webhooks.BatchCompleted>("webhooks.events.batch.completed", (data) => {
            if (data?.orgId === orgId) send(batchCompletedWebhook(data));
          }),
        );
        // One DeliveriesUpdated carries updates of many orgs: only this org's own are sent.
        stream.hold(
          deps.bus.listen<webhooks.DeliveriesUpdated>("webhooks.events.deliveries.updated", (data) => {
            for (const test of testWebhooksOf(data, orgId)) send(test);
          }),
        );
        // Lone DeliveryUpdated messages, from dispatchers older than the batches (during a rolling upgrade).
        stream.hold(
          deps.bus.listen<webhooks.DeliveryUpdated>("webhooks.events.delivery.updated", (data) => {
            if (data?.orgId === orgId) send(testWebhook(data));
          }),
        );
        // Tells the client the subscriptions are registered with the server: events after this line are not missed.
        await deps.bus.nc.flush().catch((error: unknown) => deps.logger.warn({ err: error }, "webhook event stream flush failed"));
        stream.send("ready", { orgId });
      },
    });
  });
}

const webhook = (id: string, body: { event: string }): StreamedWebhook => ({ id, event: body.event, body: JSON.stringify(body) });

/** The webhook a job event causes, built by the same code as the dispatcher's (@renderbus/webhook-payloads). */
export function webhookForJobEvent(subject: string, data: unknown): StreamedWebhook | undefined {
  switch (subject) {
    case "jobs.events.job.running": {
      const started = data as jobEvents.JobStarted;
      return webhook(`job.running:${started.jobId}`, jobRunningPayload(started));
    }
    case "jobs.events.job.completed": {
      const completed = data as jobEvents.JobCompleted;
      return webhook(`job.completed:${completed.jobId}`, jobCompletedPayload(completed));
    }
    case "jobs.events.job.failed": {
      const failed = data as jobEvents.JobFailed;
      return webhook(`job.failed:${failed.jobId}`, jobFailedPayload(failed));
    }
    default:
      // job.queued, job.dispatched, job.cancelled: no webhook (docs/webhooks.md).
      return undefined;
  }
}

export function batchCompletedWebhook(batch: webhooks.BatchCompleted): StreamedWebhook {
  const counts = { completed: batch.completed ?? 0, failed: batch.failed ?? 0, cancelled: batch.cancelled ?? 0 };
  return webhook(`batch.completed:${batch.batchId}`, batchCompletedPayload({ batchId: batch.batchId, jobCount: batch.jobCount, counts, createdAt: batch.createdAt, completedAt: batch.completedAt }));
}

/** A test delivery is announced once when created (pending, no attempt yet); its payload is built from that moment. */
export function testWebhook(update: Omit<webhooks.DeliveryUpdated, "trace">): StreamedWebhook | undefined {
  if (update.event !== "webhook.test" || update.status !== "pending" || (update.attempts ?? 0) !== 0) return undefined;
  return webhook(update.deliveryId, webhookTestPayload(update.orgId, update.occurredAt));
}

/**
 * The test webhooks a DeliveriesUpdated announces for `orgId`, never another org's (a batch mixes orgs), and none
 * without an org to match.
 */
export function testWebhooksOf(batch: webhooks.DeliveriesUpdated | undefined, orgId: string | undefined): StreamedWebhook[] {
  const tests: StreamedWebhook[] = [];
  if (!orgId) return tests;
  for (const update of batch?.updates ?? []) {
    const test = update?.orgId === orgId ? testWebhook(update) : undefined;
    if (test) tests.push(test);
  }
  return tests;
}
