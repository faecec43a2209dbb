import type { Job } from "../types.js";
import type { Output } from "./output.js";
import { seconds } from "./output.js";

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const BAR_WIDTH = 24;

/** `[██████░░░░░░] 42.3%  ETA 12s` for a job's progress (pure); "" when it has no percent. */
export function progressBar(progress: Job["progress"], width = BAR_WIDTH): string {
  if (!progress || progress.percent === null) return "";
  const percent = Math.max(0, Math.min(100, progress.percent));
  const eta = progress.etaMs !== null && percent < 100 ? `  ETA ${seconds(progress.etaMs)}` : "";
  return `[${bar(percent / 100, width)}] ${percent.toFixed(1)}%${eta}`;
}

/** `width` cells, the first `ratio` of them filled. */
const bar = (ratio: number, width: number) => {
  const filled = Math.round(ratio * width);
  return `${"█".repeat(filled)}${"░".repeat(width - filled)}`;
};

/**
 * Live progress of one job on stderr: on a terminal, one line redrawn with a spinner, the status, a progress bar
 * while it runs (percent and ETA from the API) and the elapsed time; otherwise one line per status change and per
 * 10% of progress (logs stay readable). With --json, one JSON line per status change or progress reading on stdout.
 */
/** Which tenth of the way a job is (-1 without a percent): non-interactive output prints a line per tenth. */
const tenth = (job: Job | undefined): number => (typeof job?.progress?.percent === "number" ? Math.floor(job.progress.percent / 10) : -1);

export class JobProgress {
  private job: Job | undefined;
  private frame = 0;
  private readonly started = Date.now();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly output: Output, private readonly jobId: string) {
    if (!output.json && output.interactive) this.timer = setInterval(() => this.draw(), 100);
  }

  update(job: Job): void {
    const previous = this.job;
    const statusChanged = job.status !== previous?.status;
    const progressChanged = (job.progress?.updatedAt ?? null) !== (previous?.progress?.updatedAt ?? null);
    this.job = job;
    if (!statusChanged && !progressChanged) return;
    if (this.output.json) this.output.out(JSON.stringify({ id: job.id, status: job.status, progress: job.progress ?? null, at: Date.now() }));
    else if (this.output.interactive) this.draw();
    else if (statusChanged) this.output.err(`${new Date().toISOString()}  ${job.id}  ${job.status}`);
    else if (job.status === "running" && tenth(job) > tenth(previous)) this.output.err(`${new Date().toISOString()}  ${job.id}  running  ${progressBar(job.progress)}`);
  }

  private draw(): void {
    const status = this.job?.status ?? "connecting";
    const frame = FRAMES[this.frame++ % FRAMES.length];
    const bar = this.job?.status === "running" ? progressBar(this.job.progress) : "";
    process.stderr.write(`\r\x1b[2K${frame} ${this.jobId}  ${this.job?.type ?? ""}  ${status}${bar ? `  ${bar}` : ""}  ${seconds(Date.now() - this.started)}`);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    if (!this.output.json && this.output.interactive) process.stderr.write("\r\x1b[2K");
  }
}

const megabytes = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

/**
 * An upload's progress on stderr: on a terminal, a bar redrawn in place with the percentage and the bytes sent;
 * otherwise a line every 10%. With --json, one JSON line per 10% on stdout.
 */
export class UploadProgress {
  private lastDecile = -1;

  constructor(private readonly output: Output, private readonly name: string) {}

  update(sent: number, total: number | null): void {
    const ratio = total ? Math.min(1, sent / total) : 0;
    const decile = Math.floor(ratio * 10);
    if (this.output.json) {
      if (decile !== this.lastDecile) this.output.out(JSON.stringify({ upload: this.name, sent, total, at: Date.now() }));
    } else if (this.output.interactive) {
      process.stderr.write(`\r\x1b[2KUploading ${this.name} ${bar(ratio, BAR_WIDTH)} ${total ? `${Math.floor(ratio * 100)}%` : ""} ${megabytes(sent)}${total ? ` / ${megabytes(total)}` : ""}`);
    } else if (decile !== this.lastDecile) {
      this.output.err(`Uploading ${this.name}: ${Math.floor(ratio * 100)}% (${megabytes(sent)}${total ? ` of ${megabytes(total)}` : ""})`);
    }
    this.lastDecile = decile;
  }

  stop(): void {
    if (!this.output.json && this.output.interactive) process.stderr.write("\r\x1b[2K");
  }
}
