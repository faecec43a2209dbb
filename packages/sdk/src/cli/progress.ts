import type { Job } from "../types.js";
import type { Output } from "./output.js";
import { seconds } from "./output.js";

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/**
 * Live progress of one job on stderr: on a terminal, one line redrawn with a spinner, the status and the elapsed
 * time; otherwise one line per status change (logs stay readable). With --json, one JSON line per change on stdout.
 */
export class JobProgress {
  private job: Job | undefined;
  private frame = 0;
  private readonly started = Date.now();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly output: Output, private readonly jobId: string) {
    if (!output.json && output.interactive) this.timer = setInterval(() => this.draw(), 100);
  }

  update(job: Job): void {
    const changed = job.status !== this.job?.status;
    this.job = job;
    if (!changed) return;
    if (this.output.json) this.output.out(JSON.stringify({ id: job.id, status: job.status, at: Date.now() }));
    else if (this.output.interactive) this.draw();
    else this.output.err(`${new Date().toISOString()}  ${job.id}  ${job.status}`);
  }

  private draw(): void {
    const status = this.job?.status ?? "connecting";
    const frame = FRAMES[this.frame++ % FRAMES.length];
    process.stderr.write(`\r\x1b[2K${frame} ${this.jobId}  ${this.job?.type ?? ""}  ${status}  ${seconds(Date.now() - this.started)}`);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    if (!this.output.json && this.output.interactive) process.stderr.write("\r\x1b[2K");
  }
}

const BAR_WIDTH = 30;

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
      const filled = Math.round(ratio * BAR_WIDTH);
      const bar = `${"█".repeat(filled)}${"░".repeat(BAR_WIDTH - filled)}`;
      process.stderr.write(`\r\x1b[2KUploading ${this.name} ${bar} ${total ? `${Math.floor(ratio * 100)}%` : ""} ${megabytes(sent)}${total ? ` / ${megabytes(total)}` : ""}`);
    } else if (decile !== this.lastDecile) {
      this.output.err(`Uploading ${this.name}: ${Math.floor(ratio * 100)}% (${megabytes(sent)}${total ? ` of ${megabytes(total)}` : ""})`);
    }
    this.lastDecile = decile;
  }

  stop(): void {
    if (!this.output.json && this.output.interactive) process.stderr.write("\r\x1b[2K");
  }
}
