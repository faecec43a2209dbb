import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GatewayDeps } from "../deps.js";
import { presentJob } from "../present/present.js";
import { parseRequestPart } from "../http/validation.js";
import { authenticate } from "../auth/authenticate.js";

const TERMINAL = new Set(["completed", "failed", "cancelled"]);
const HEARTBEAT_MS = 15_000;
// A status change can be missed between the snapshot and the subscription, or during a NATS reconnect; a slow
// re-read closes that gap without making the stream depend on polling.
const RESYNC_MS = 5_000;

/**
 * `GET /jobs/{job_id}/events`: Server-Sent Events with the job each time its status changes, ending once the job is
 * terminal. Event name = status; data = the job object.
 */
const jobIdParams = z.strictObject({ jobId: z.string().min(1).max(100) });

export function registerJobEventStream(app: FastifyInstance, deps: GatewayDeps): void {
  app.get("/jobs/:jobId/events", async (request, reply) => {
    const auth = await authenticate(request, reply, deps);
    const { jobId } = parseRequestPart(jobIdParams, request.params, "path");
    const first = await deps.jobs.getJob({ jobId }, { auth });

    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      ...Object.fromEntries(Object.entries(reply.getHeaders()).map(([k, v]) => [k, String(v)])),
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-cache, no-transform",
      Connection: "keep-alive",
      "X-Accel-Buffering": "no",
    });
    let lastStatus = "";
    let closed = false;
    const send = (job: ReturnType<typeof presentJob>) => {
      if (closed || job.status === lastStatus) return;
      lastStatus = job.status;
      raw.write(`event: ${job.status}\nid: ${job.id}:${job.status}\ndata: ${JSON.stringify(job)}\n\n`);
      if (TERMINAL.has(job.status)) close();
    };
    const refresh = async () => {
      try {
        send(presentJob(await deps.jobs.getJob({ jobId }, { auth })));
      } catch (error) {
        deps.logger.warn({ err: error, jobId }, "job event stream refresh failed");
      }
    };
    const stopWatching = deps.jobEvents.watch(jobId, () => void refresh());
    const heartbeat = setInterval(() => raw.write(": keep-alive\n\n"), HEARTBEAT_MS);
    const resync = setInterval(() => void refresh(), RESYNC_MS);
    function close() {
      if (closed) return;
      closed = true;
      stopWatching();
      clearInterval(heartbeat);
      clearInterval(resync);
      raw.end();
    }
    request.raw.on("close", close);
    send(presentJob(first));
  });
}
