import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GatewayDeps } from "../deps.js";
import { presentJob } from "../present/present.js";
import { parseRequestPart } from "../http/validation.js";
import { serveEventStream } from "./event-stream.js";
import { openStreamsOf } from "./open-streams.js";

const TERMINAL = new Set(["completed", "failed", "cancelled"]);
// A status change can be missed between the snapshot and the subscription, or during a NATS reconnect; a slow
// re-read closes that gap without making the stream depend on polling.
const RESYNC_MS = 5_000;

const jobIdParams = z.strictObject({ jobId: z.string().min(1).max(100) });

/**
 * `GET /jobs/{job_id}/events`: Server-Sent Events with the job each time its status changes, ending once the job is
 * terminal. Event name = status; data = the job object. While it runs, `progress` events carry the same job object
 * with its new `progress` (`{percent, etaMs, updatedAt}`, at most one per 500 ms as the worker sends them;
 * docs/concepts.md "Progress"); the `completed` job shows 100%. Clients that only look at `status` see no change. Credential rechecks, lifetime, the org's stream cap and
 * backpressure are the shared lifecycle of {@link serveEventStream}; reads use the credential's current context.
 */
export function registerJobEventStream(app: FastifyInstance, deps: GatewayDeps): void {
  const streams = openStreamsOf(app, deps);
  app.get("/jobs/:jobId/events", async (request, reply) => {
    await serveEventStream(streams, request, reply, {
      kind: "job",
      prepare: async (auth) => {
        const { jobId } = parseRequestPart(jobIdParams, request.params, "path");
        return { jobId, first: await deps.jobs.getJob({ jobId }, { auth }) };
      },
      start: (stream, { jobId, first }) => {
        let lastStatus = "";
        let lastJob: ReturnType<typeof presentJob> | undefined;
        const send = (job: ReturnType<typeof presentJob>) => {
          if (stream.gone || job.status === lastStatus) return;
          lastStatus = job.status;
          lastJob = job;
          stream.send(job.status, job, `${job.id}:${job.status}`);
          if (TERMINAL.has(job.status)) stream.end();
        };
        const orgId = first.orgId;
        const present = (job: typeof first) => presentJob(job, deps.jobProgress?.get(orgId, jobId));
        const refresh = async () => {
          if (stream.gone || !stream.auth) return;
          try {
            send(present(await deps.jobs.getJob({ jobId }, { auth: stream.auth })));
          } catch (error) {
            deps.logger.warn({ err: error, jobId }, "job event stream refresh failed");
          }
        };
        stream.hold(deps.jobEvents.watch(jobId, () => void refresh()));
        if (deps.jobProgress) {
          stream.hold(
            deps.jobProgress.watch(jobId, (progress) => {
              // The hub keys by job id; the stream shows only its own org's job (checked by the GetJob above).
              if (lastJob?.status !== "running" || !deps.jobProgress?.get(orgId, jobId)) return;
              lastJob = { ...lastJob, progress };
              stream.send("progress", lastJob);
            }),
          );
        }
        stream.every(RESYNC_MS, () => void refresh());
        send(present(first));
      },
    });
  });
}
