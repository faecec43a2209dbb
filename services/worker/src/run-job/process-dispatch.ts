import type { JobProgressTiming } from "@renderbus/bus";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { auth, jobEvents, jobs } from "@renderbus/contracts";
import { AppError } from "@renderbus/errors";
import { isJobTypeName, JOB_TYPES, type JobTypeName } from "@renderbus/job-types";
import type { PromiseClient } from "@renderbus/rpc";
import { signOutputUrl, type ObjectStore } from "@renderbus/storage";
import type { Logger } from "@renderbus/telemetry";
import type { UploadStore } from "@renderbus/uploads";
import type { InputAgent } from "../fetch-input/guarded-agent.js";
import { JobCancelledError, JobFailure, inputError, providerError } from "../job-failure.js";
import { countVideoDurationMs } from "../media/count-duration.js";
import { inputProbeFor } from "../providers/index.js";
import { checkOutputFile } from "./check-output-file.js";
import { downloadInputs } from "./download-inputs.js";
import { estimateOutput } from "./estimate-output.js";
import { measureOutput } from "./output-metadata.js";
import { progressReporter, type PublishProgress } from "./progress-reporter.js";
import { chargeFor, minimumReservation, reservationFor, reserveJobCredits } from "./reserve-credits.js";
import { runProvider } from "./run-provider.js";

/** What processing a dispatch needs from the outside world. */
export interface JobRunnerDeps {
  jobs: PromiseClient<jobs.JobsClient>;
  billing: PromiseClient<auth.BillingClient>;
  outputs: ObjectStore;
  /** Where inputs given as upload ids are read from (docs/uploads.md). */
  uploads: UploadStore;
  /** How input downloads connect (the SSRF-guarded agent in production) and their per-phase deadlines. */
  inputAgent: InputAgent;
  logger: Logger;
  workerId: string;
  publicUrl: string;
  outputSigningSecret: string;
  outputRetentionMs: number;
  inputFetchTimeoutMs: number;
  /** INPUT_MIN_BYTES_PER_SECOND: past inputFetchTimeoutMs, a download keeping up this rate goes on. */
  inputMinBytesPerSecond?: number;
  /** Where a running job's progress goes (core NATS in the worker); none: not reported. */
  publishProgress?: PublishProgress;
  /** Used when a work message carries no limits (older producers). */
  fallbackLimits: { maxRunSeconds: number; maxInputBytes: number };
}

/** How processing ended; the caller acks in every case (the outcome is recorded by the jobs service). */
export type DispatchOutcome = "completed" | "failed" | "cancelled";

async function reportFailure(deps: JobRunnerDeps, jobId: string, failure: JobFailure): Promise<DispatchOutcome> {
  try {
    await deps.jobs.failJob({ jobId, error: { code: failure.code, message: failure.message } });
  } catch (error) {
    // CONFLICT: the job already ended (cancelled meanwhile, or a report from an earlier delivery landed).
    if (!(error instanceof AppError && error.code === "CONFLICT")) throw error;
  }
  return "failed";
}

/**
 * Runs one job end to end: reserve the job type's minimum price, download and probe the inputs, raise the reservation
 * to cover the output the job can produce, tell the jobs service the job started, run the provider (stopped at the
 * output length the reservation covers), and report completion with the price of the output produced, which the
 * reservation always covers, or the failure. Reports and reservations are idempotent, so running a redelivered
 * message again after a crash is safe.
 * @throws for transient trouble (a dependency unreachable): the caller naks and the message is retried.
 */
export async function processDispatch(
  dispatch: jobEvents.JobDispatch,
  deps: JobRunnerDeps,
  signal: AbortSignal,
  hooks: { onSpawn?: (pid: number) => void } = {},
): Promise<DispatchOutcome> {
  const { jobId, orgId } = dispatch;
  const log = deps.logger.child({ jobId, orgId, jobType: dispatch.type });
  if (!isJobTypeName(dispatch.type)) return reportFailure(deps, jobId, providerError(`unknown job type ${dispatch.type}`));
  const type: JobTypeName = dispatch.type;
  const limits = {
    maxRunSeconds: dispatch.limits?.maxRunSeconds || deps.fallbackLimits.maxRunSeconds,
    maxInputBytes: dispatch.limits?.maxInputBytes || deps.fallbackLimits.maxInputBytes,
  };
  const workDir = await mkdtemp(path.join(tmpdir(), "renderbus-job-"));
  // Milliseconds each phase took, logged with "job completed" (bench/benchmarks/job-overhead.ts reads them to see
  // where a job's time goes beyond ffmpeg's own).
  const phasesMs: Record<string, number> = {};
  let phaseStart = performance.now();
  const phaseEnded = (phase: string) => {
    const now = performance.now();
    phasesMs[phase] = Math.round((now - phaseStart) * 10) / 10;
    phaseStart = now;
  };
  try {
    // Before any byte is downloaded: an org that cannot pay for the least the job costs gets no bandwidth or disk.
    const minimum = minimumReservation(type);
    await reserveJobCredits(deps.billing, { orgId, jobId, credits: minimum.credits, breakdown: minimum.breakdown });
    phaseEnded("reserveMinimum");
    const inputUrls = Object.fromEntries(
      Object.entries(dispatch.inputs ?? {}).filter((entry): entry is [string, string] => typeof entry[1] === "string" && entry[1] !== ""),
    );
    const { inputs, probes } = await downloadInputs({
      urls: inputUrls,
      uploads: { store: deps.uploads, orgId },
      workDir,
      maxBytes: limits.maxInputBytes,
      timeoutMs: deps.inputFetchTimeoutMs,
      ...(deps.inputMinBytesPerSecond ? { minBytesPerSecond: deps.inputMinBytesPerSecond } : {}),
      agent: deps.inputAgent,
      signal,
      probe: inputProbeFor(type),
    });
    if (signal.aborted) throw new JobCancelledError();
    phaseEnded("downloadAndProbe");

    const outputKind = JOB_TYPES[type].output;
    let sourceDurationMs = probes.source?.durationMs ?? null;
    if ((outputKind === "video" || outputKind === "audio") && probes.source && sourceDurationMs === null) {
      // No stated duration (a raw H.264 stream): count the packets rather than price the job at nothing.
      sourceDurationMs = await countVideoDurationMs(inputs.source!, { timeoutMs: limits.maxRunSeconds * 1000 });
      if (sourceDurationMs === null) throw inputError("inputs.source: states no duration and its length could not be measured");
      log.info({ sourceDurationMs }, "source length measured by counting packets");
      phaseEnded("countPackets");
    }
    const reservation = reservationFor(estimateOutput(type, (dispatch.params ?? {}) as Record<string, unknown>, probes, sourceDurationMs));
    await reserveJobCredits(deps.billing, { orgId, jobId, credits: reservation.credits, breakdown: reservation.breakdown });
    let timing: JobProgressTiming | undefined;
    try {
      const { job } = await deps.jobs.startJob({ jobId, workerId: deps.workerId });
      if (job?.timing?.createdAt && job.timing.startedAt) timing = { createdAt: Number(job.timing.createdAt), startedAt: Number(job.timing.startedAt) };
    } catch (error) {
      if (error instanceof AppError && error.code === "CONFLICT") throw new JobCancelledError();
      throw error;
    }
    phaseEnded("reserveAndStart");
    log.info({ reserved: reservation.credits, coveredMs: reservation.coveredMs }, "job started");

    const output = await runProvider(type, {
      params: dispatch.params ?? {},
      inputs,
      probes,
      workDir,
      timeoutMs: limits.maxRunSeconds * 1000,
      signal,
      onSpawn: hooks.onSpawn,
      maxOutputMs: reservation.coveredMs,
      // The output expected: the source's measured length, stopped at what the reservation covers (-t).
      onProgress: deps.publishProgress
        ? progressReporter({
            orgId,
            jobId,
            expectedOutputMs: (outputKind === "video" || outputKind === "audio") && sourceDurationMs ? Math.min(sourceDurationMs, reservation.coveredMs ?? Infinity) : null,
            timing,
            publish: deps.publishProgress,
          })
        : undefined,
    });
    phaseEnded("provider");
    // A regular file, not a symlink or FIFO the sandbox left (check-output-file.ts), before anything opens it.
    const { size: outputSize } = await checkOutputFile(output.path);
    // Measured before it is stored: an output the reservation cannot be raised to cover is never published.
    const metadata = await measureOutput(type, output, outputSize).catch(() => {
      throw providerError("the provider produced an unreadable output");
    });
    const cost = chargeFor({ output: outputKind, durationMs: metadata.durationMs, height: metadata.height }, reservation);
    if (cost.credits > reservation.credits) {
      // The output is no longer than the reservation covers (-t), but its height can price it at a higher rate than
      // the probe did (or its last frame end a hair past the cap): the reservation is raised to the price before the
      // job completes, or the job fails, so completion never reports a cost the reservation does not cover.
      log.warn({ reserved: reservation.credits, credits: cost.credits, breakdown: cost.breakdown }, "output priced above its reservation; raising it");
      await reserveJobCredits(deps.billing, { orgId, jobId, credits: cost.credits, breakdown: cost.breakdown });
    }
    phaseEnded("measureOutput");
    const outputKey = `${orgId}/${jobId}/output.${output.extension}`;
    const { size } = await deps.outputs.put(outputKey, output.path, output.contentType);
    phaseEnded("storeOutput");
    const url = signOutputUrl({ publicUrl: deps.publicUrl, key: outputKey, expiresAt: Date.now() + deps.outputRetentionMs, secret: deps.outputSigningSecret });
    try {
      await deps.jobs.completeJob({
        jobId,
        result: {
          url,
          outputKey,
          contentType: output.contentType,
          metadata: {
            durationMs: metadata.durationMs ?? undefined,
            width: metadata.width ?? undefined,
            height: metadata.height ?? undefined,
            fileSize: metadata.fileSize,
          },
        },
        cost,
      });
    } catch (error) {
      if (error instanceof AppError && error.code === "CONFLICT") return "cancelled";
      throw error;
    }
    phaseEnded("reportCompletion");
    log.info({ credits: cost.credits, fileSize: size, phasesMs }, "job completed");
    return "completed";
  } catch (error) {
    if (error instanceof JobCancelledError) {
      log.info("job cancelled; provider stopped");
      return "cancelled";
    }
    if (error instanceof JobFailure) {
      log.info({ code: error.code, reason: error.message }, "job failed");
      return reportFailure(deps, jobId, error);
    }
    throw error;
  } finally {
    await rm(workDir, { recursive: true, force: true }).catch((error: unknown) => log.warn({ err: error }, "could not remove the job's temp dir"));
  }
}
