import type { Bus, StreamSpec } from "@renderbus/bus";
import type { Logger } from "@renderbus/telemetry";

/**
 * Markers of dispatches in progress, one subject per job (`worker.attempts.<jobId>`). A delivery writes its marker
 * before it starts and removes it when it ends in any way the process lived through (ack, nak, term). A marker still
 * there when the same job arrives again means the process holding the earlier delivery died with it: an uncaught
 * exception, an OOM kill, a segfault in a native module. Markers outlive nothing for long: a day at most.
 */
export const WORKER_ATTEMPTS: StreamSpec = { name: "WORKER_ATTEMPTS", subjects: ["worker.attempts.>"], maxAgeMs: 24 * 60 * 60 * 1000 };

/** Deliveries of one job that may end with the worker process before the job is failed instead of run again. */
export const MAX_CRASHES = 2;

interface AttemptMarker {
  /** Earlier deliveries of this job that ended with their process. */
  crashes: number;
  deliveryCount: number;
  workerId: string;
  startedAt: string;
}

/** Job ids become a subject token; anything else is not tracked (and cannot be a wildcard). */
const TRACKABLE = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * Counts the deliveries of a job that crashed their worker, in JetStream so every replica sees them. The ledger is an
 * aid, never a gate: if NATS cannot answer, a job runs as if it had no crashes (and the failure is logged).
 */
/** The logical subject of a job's marker (the bus adds its namespace). */
const attemptsSubject = (jobId: string) => `worker.attempts.${jobId}`;

export class CrashLedger {
  private readonly stream: string;

  constructor(
    private readonly bus: Bus,
    private readonly workerId: string,
    private readonly logger: Logger,
  ) {
    this.stream = bus.streamName(WORKER_ATTEMPTS);
  }


  /**
   * Records that a delivery of `jobId` starts here.
   * @returns how many earlier deliveries of the job ended with their process.
   */
  async begin(jobId: string, deliveryCount: number): Promise<number> {
    if (!TRACKABLE.test(jobId)) return 0;
    try {
      // A first delivery has no earlier marker to find: one request saved on the common path.
      const previous = deliveryCount > 1 ? await this.bus.lastMessage(WORKER_ATTEMPTS, attemptsSubject(jobId)) : null;
      const crashes = previous ? previous.json<AttemptMarker>().crashes + 1 : 0;
      const marker: AttemptMarker = { crashes, deliveryCount, workerId: this.workerId, startedAt: new Date().toISOString() };
      await this.bus.publish(attemptsSubject(jobId), marker);
      return crashes;
    } catch (error) {
      this.logger.warn({ err: error, jobId }, "could not record the dispatch attempt; crash counting skipped");
      return 0;
    }
  }

  /** The delivery ended with the process alive: its marker goes. */
  async end(jobId: string): Promise<void> {
    if (!TRACKABLE.test(jobId)) return;
    await this.bus.jsm.streams.purge(this.stream, { filter: this.bus.subject(attemptsSubject(jobId)) }).catch((error: unknown) => {
      this.logger.warn({ err: error, jobId }, "could not clear the dispatch attempt marker");
    });
  }
}

