import { DISPATCH_DURABLE, STREAMS, type Bus } from "@renderbus/bus";
import { dispatchSubject } from "../job/job-messages.js";

/** What the watchdog reads from the dispatch stream to tell a queued work message from one a worker was handed. */
export interface DispatchQueue {
  /**
   * The last stream sequence the workers' shared durable ({@link DISPATCH_DURABLE}) handed out (its consumer info's
   * `delivered.stream_seq`): a work message above it has never been delivered to any worker. 0 while the durable does
   * not exist (no worker has started yet, or it was deleted): nothing has been delivered.
   */
  deliveredThrough(): Promise<number>;
  /** The stream sequence of the job's work message, or null when the stream no longer holds one (a direct read). */
  messageSequence(jobType: string, jobId: string): Promise<number | null>;
}

/** The dispatch stream as `bus` sees it. */
export function dispatchQueueIn(bus: Bus): DispatchQueue {
  const stream = bus.streamName(STREAMS.jobDispatch);
  return {
    deliveredThrough: async () => {
      try {
        return (await bus.jsm.consumers.info(stream, DISPATCH_DURABLE)).delivered.stream_seq;
      } catch (error) {
        if (/consumer not found/i.test(String(error))) return 0;
        throw error;
      }
    },
    messageSequence: async (jobType, jobId) => (await bus.lastMessage(STREAMS.jobDispatch, dispatchSubject(jobType, jobId)))?.seq ?? null,
  };
}
