import { useEffect, useRef } from "react";
import { isTerminal } from "./format";
import { JOB_STATUSES, type Job } from "./types";

/**
 * Follows jobs live over `GET /jobs/{id}/events` (Server-Sent Events; the cookie rides along on same-origin
 * EventSource). Each event carries the whole job: one per status change, and `progress` events (the running job with
 * its new progress, at most every 500 ms). A stream is closed by us once its job is terminal, because an
 * EventSource would otherwise reconnect after the server ends it.
 *
 * Browsers allow about six HTTP/1.1 connections per origin, so callers pass only a few ids (see MAX_LIVE_STREAMS).
 */
export const MAX_LIVE_STREAMS = 3;

export function useJobEvents(jobIds: string[], onJob: (job: Job) => void): void {
  const handler = useRef(onJob);
  handler.current = onJob;
  const key = jobIds.slice().sort().join(",");
  useEffect(() => {
    if (!key) return;
    const sources = key.split(",").map((jobId) => {
      const source = new EventSource(`/jobs/${encodeURIComponent(jobId)}/events`);
      const listener = (event: MessageEvent<string>) => {
        try {
          const job = JSON.parse(event.data) as Job;
          handler.current(job);
          if (isTerminal(job.status)) source.close();
        } catch {
          // A malformed event is skipped; the next one (or the page's refresh) brings the state.
        }
      };
      for (const name of [...JOB_STATUSES, "progress"]) source.addEventListener(name, listener as EventListener);
      return source;
    });
    return () => sources.forEach((source) => source.close());
  }, [key]);
}
