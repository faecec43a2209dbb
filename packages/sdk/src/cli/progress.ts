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
