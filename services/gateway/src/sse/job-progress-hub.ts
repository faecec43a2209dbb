import { z } from "zod";
import { JOB_PROGRESS_SUBJECTS, type Bus } from "@renderbus/bus";
import { ListenersByKey } from "./listeners-by-key.js";

/** A running job's progress as `GET /jobs/{id}` and the SSE `progress` event show it (docs/concepts.md, "Progress"). */
export interface JobProgress {
  percent: number | null;
  etaMs: number | null;
  updatedAt: number;
}

/** A job's progress is forgotten when no message refreshed it for this long (the worker sends one every 0.5 s). */
export const PROGRESS_TTL_MS = 30_000;
/** At most this many jobs' progress is held; past it the least recently updated is dropped. */
export const MAX_TRACKED_JOBS = 100_000;

// The worker is trusted, but a message is still checked before it reaches a client.
const message = z.object({
  orgId: z.string().min(1).max(100),
  jobId: z.string().min(1).max(100),
  percent: z.number().min(0).max(100).nullable(),
  etaMs: z.number().int().min(0).max(7 * 24 * 3_600_000).nullable(),
  updatedAt: z.number().int().positive(),
});

type Listener = (progress: JobProgress) => void;

/** The job events after which a job reports no more progress. */
const TERMINAL_JOB_EVENT_SUBJECTS = ["jobs.events.job.completed", "jobs.events.job.failed", "jobs.events.job.cancelled"] as const;

/**
 * The latest progress of every running job, from the workers' core NATS messages (`jobs.progress.<org>.<job>`): one
 * subscription per gateway replica, every replica holds every job's last tick (a few hundred bytes each), so any
 * replica answers `GET /jobs/{id}` with it. Nothing is stored anywhere else: a replica that starts while a job runs
 * knows its progress from the next tick (0.5 s later). Terminal job events drop the entry.
 */
export class JobProgressHub {
  private readonly latest = new Map<string, { orgId: string; progress: JobProgress; receivedAt: number }>();
  private readonly listeners = new ListenersByKey<JobProgress>();
  private readonly unsubscribe: Array<() => void>;
  private readonly sweep: NodeJS.Timeout;

  constructor(
    bus: Pick<Bus, "listen">,
    private readonly options: { ttlMs?: number; maxJobs?: number; now?: () => number } = {},
  ) {
    this.unsubscribe = [
      bus.listen<unknown>(JOB_PROGRESS_SUBJECTS, (data, subject) => {
        const parsed = message.safeParse(data);
        if (!parsed.success) return;
        const { orgId, jobId, ...progress } = parsed.data;
        // The subject names the job too: a body that disagrees with it is not believed.
        if (subject !== `jobs.progress.${orgId}.${jobId}`) return;
        this.record(orgId, jobId, progress);
      }),
      // The terminal subjects only: every other job event of every org would cost a decode here for nothing.
      ...TERMINAL_JOB_EVENT_SUBJECTS.map((subject) =>
        bus.listen<{ jobId?: string }>(subject, (event) => {
          if (event?.jobId) this.latest.delete(event.jobId);
        }),
      ),
    ];
    this.sweep = setInterval(() => this.dropExpired(), this.ttlMs).unref();
  }

  private get ttlMs(): number {
    return this.options.ttlMs ?? PROGRESS_TTL_MS;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  /** Records a tick (also what tests call to stand in for a worker). */
  record(orgId: string, jobId: string, progress: JobProgress): void {
    this.latest.delete(jobId);
    this.latest.set(jobId, { orgId, progress, receivedAt: this.now() });
    const max = this.options.maxJobs ?? MAX_TRACKED_JOBS;
    while (this.latest.size > max) this.latest.delete(this.latest.keys().next().value!);
    this.listeners.notify(jobId, progress);
  }

  /** The last progress of a job of `orgId`, or null (none yet, expired, or another org's job). */
  get(orgId: string, jobId: string): JobProgress | null {
    const entry = this.latest.get(jobId);
    if (!entry || entry.orgId !== orgId) return null;
    if (this.now() - entry.receivedAt > this.ttlMs) {
      this.latest.delete(jobId);
      return null;
    }
    return entry.progress;
  }

  /** Calls `listener` with each progress tick of one job; returns the function that stops it. */
  watch(jobId: string, listener: Listener): () => void {
    return this.listeners.add(jobId, listener);
  }

  get size(): number {
    return this.latest.size;
  }

  private dropExpired(): void {
    const cutoff = this.now() - this.ttlMs;
    for (const [jobId, entry] of this.latest) if (entry.receivedAt < cutoff) this.latest.delete(jobId);
  }

  close(): void {
    clearInterval(this.sweep);
    for (const stop of this.unsubscribe) stop();
    this.latest.clear();
    this.listeners.clear();
  }
}
