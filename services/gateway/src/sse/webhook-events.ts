import type { FastifyInstance } from "fastify";
import type { jobEvents, jobs, webhooks } from "@renderbus/contracts";
import { planLimit } from "@renderbus/errors";
import type { GatewayDeps } from "../deps.js";
import { authenticate } from "../auth/authenticate.js";

const HEARTBEAT_MS = 15_000;

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
 * dispatcher consumes (job events, batch completions, test deliveries), with the seed's payload shapes and member
 * order, which makes the bytes equal to what the dispatcher signs. Each open stream holds its own core NATS
 * subscriptions: this is a developer tool with few concurrent listeners, unlike job SSE (see JobEventHub).
 */
export function registerWebhookEventStream(app: FastifyInstance, deps: GatewayDeps): void {
  app.get("/webhooks/events/stream", async (request, reply) => {
    const auth = await authenticate(request, reply, deps);
    const plan = deps.plans[auth.plan as keyof typeof deps.plans];
    if (!plan?.webhooks) throw planLimit(`Webhooks are not included in the ${auth.plan} plan`);

    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      ...Object.fromEntries(Object.entries(reply.getHeaders()).map(([k, v]) => [k, String(v)])),
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-cache, no-transform",
      Connection: "keep-alive",
      "X-Accel-Buffering": "no",
    });
    const send = (webhook: StreamedWebhook | undefined) => {
      if (!webhook || raw.writableEnded) return;
      raw.write(`event: webhook\nid: ${webhook.id}\ndata: ${JSON.stringify(webhook)}\n\n`);
    };
    const stops = [
      deps.bus.listen<{ orgId?: string }>("jobs.events.job.*", (data, subject) => {
        if (data?.orgId === auth.orgId) send(webhookForJobEvent(subject, data));
      }),
      deps.bus.listen<webhooks.BatchCompleted>("webhooks.events.batch.completed", (data) => {
        if (data?.orgId === auth.orgId) send(batchCompletedWebhook(data));
      }),
      deps.bus.listen<webhooks.DeliveryUpdated>("webhooks.events.delivery.updated", (data) => {
        if (data?.orgId === auth.orgId) send(testWebhook(data));
      }),
    ];
    const heartbeat = setInterval(() => raw.write(": keep-alive\n\n"), HEARTBEAT_MS);
    request.raw.on("close", () => {
      for (const stop of stops) stop();
      clearInterval(heartbeat);
      raw.end();
    });
    // Tells the client the subscriptions are registered with the server: events after this line are not missed.
    await deps.bus.nc.flush().catch((error: unknown) => deps.logger.warn({ err: error }, "webhook event stream flush failed"));
    if (raw.writableEnded) return;
    raw.write(`event: ready\ndata: ${JSON.stringify({ orgId: auth.orgId })}\n\n`);
  });
}

const orNull = (value: number | undefined | null): number | null => (value === undefined ? null : value);

function jobTiming(timing: jobs.JobTiming | undefined) {
  return { createdAt: timing?.createdAt ?? null, startedAt: orNull(timing?.startedAt), completedAt: orNull(timing?.completedAt) };
}

/** The seed's job payloads (section 6), built exactly as the dispatcher builds them from the same event. */
export function webhookForJobEvent(subject: string, data: unknown): StreamedWebhook | undefined {
  switch (subject) {
    case "jobs.events.job.running": {
      const started = data as jobEvents.JobStarted;
      const body = { event: "job.running", jobId: started.jobId, type: started.type, timing: { createdAt: started.createdAt, startedAt: started.startedAt } };
      return { id: `job.running:${started.jobId}`, event: body.event, body: JSON.stringify(body) };
    }
    case "jobs.events.job.completed": {
      const completed = data as jobEvents.JobCompleted;
      const metadata = completed.result?.metadata;
      const body = {
        event: "job.completed",
        jobId: completed.jobId,
        result: {
          url: completed.result?.url ?? null,
          metadata: { durationMs: orNull(metadata?.durationMs), width: orNull(metadata?.width), height: orNull(metadata?.height), fileSize: orNull(metadata?.fileSize) },
        },
        cost: { credits: completed.cost?.credits ?? 0, breakdown: completed.cost?.breakdown ?? "" },
        timing: jobTiming(completed.timing),
      };
      return { id: `job.completed:${completed.jobId}`, event: body.event, body: JSON.stringify(body) };
    }
    case "jobs.events.job.failed": {
      const failed = data as jobEvents.JobFailed;
      const body = {
        event: "job.failed",
        jobId: failed.jobId,
        error: { code: failed.error?.code ?? "PROVIDER_ERROR", message: failed.error?.message ?? "" },
        timing: jobTiming(failed.timing),
      };
      return { id: `job.failed:${failed.jobId}`, event: body.event, body: JSON.stringify(body) };
    }
    default:
      // job.queued, job.dispatched, job.cancelled: no webhook (seed section 6).
      return undefined;
  }
}

export function batchCompletedWebhook(batch: webhooks.BatchCompleted): StreamedWebhook {
  const body = {
    event: "batch.completed",
    batchId: batch.batchId,
    jobCount: batch.jobCount,
    counts: { completed: batch.completed ?? 0, failed: batch.failed ?? 0, cancelled: batch.cancelled ?? 0 },
    timing: { createdAt: batch.createdAt, completedAt: batch.completedAt },
  };
  return { id: `batch.completed:${batch.batchId}`, event: body.event, body: JSON.stringify(body) };
}

/** A test delivery is announced once when created (pending, no attempt yet); its payload is built from that moment. */
export function testWebhook(update: webhooks.DeliveryUpdated): StreamedWebhook | undefined {
  if (update.event !== "webhook.test" || update.status !== "pending" || (update.attempts ?? 0) !== 0) return undefined;
  const body = { event: "webhook.test", orgId: update.orgId, message: "This is a test event from Renderbus", timing: { createdAt: update.occurredAt } };
  return { id: update.deliveryId, event: body.event, body: JSON.stringify(body) };
}
