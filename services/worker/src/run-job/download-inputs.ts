import path from "node:path";
import { isUploadId } from "@renderbus/job-types";
import type { UploadStore } from "@renderbus/uploads";
import { fetchInput } from "../fetch-input/fetch-input.js";
import type { InputAgent } from "../fetch-input/guarded-agent.js";
import { inputError } from "../job-failure.js";
import { probeInputHeader } from "../media/header-probe.js";
import { MediaCapError } from "../media/media-caps.js";
import { NotMediaError, probeMedia, type MediaProbe } from "../media/probe.js";

/**
 * `ffprobe`: every input is probed by ffprobe in the sandbox. `header-first`: an MP4/MOV input is read from its movie
 * header, a PNG from its IHDR chunk, in-process when that reads it as ffprobe would (media/header-probe.ts), anything
 * else by ffprobe.
 */
export type InputProbe = "ffprobe" | "header-first";

/** One input's probe, the way `how` says. */
async function probeInput(file: string, how: InputProbe): Promise<MediaProbe> {
  if (how === "header-first") {
    try {
      const header = await probeInputHeader(file);
      if (header) return header;
    } catch (error) {
      if (error instanceof MediaCapError) throw error;
      // A header this reader trips on is ffprobe's to judge.
    }
  }
  return probeMedia(file);
}

function inputExtension(url: string): string {
  // ffmpeg picks demuxers partly by extension (subtitles especially), so keep a plain one when the URL has it.
  let pathname: string;
  try {
    pathname = new URL(url).pathname;
  } catch {
    return ""; // fetchInput reports the bad URL
  }
  return extensionOf(pathname);
}

function extensionOf(name: string): string {
  const match = /\.([a-z0-9]{1,5})$/i.exec(name);
  return match ? `.${match[1]!.toLowerCase()}` : "";
}

/**
 * Copies a finished upload of the job's org into `destination` (docs/uploads.md: the worker reads the upload store
 * directly, the same directory as the gateway's UPLOAD_DIR in local mode).
 * @throws JobFailure INPUT_ERROR when the upload is not the org's, incomplete, expired, gone or too large.
 */
async function readUpload(options: { name: string; id: string; orgId: string; uploads: UploadStore; maxBytes: number; workDir: string }): Promise<string> {
  const { name, id } = options;
  const upload = await options.uploads.describe(id);
  if (!upload || upload.orgId !== options.orgId) throw inputError(`inputs.${name}: upload ${id} not found (expired uploads are deleted)`);
  if (!upload.complete) throw inputError(`inputs.${name}: upload ${id} is not complete`);
  if (upload.expiresAt <= Date.now()) throw inputError(`inputs.${name}: upload ${id} has expired`);
  if (upload.offset > options.maxBytes) throw inputError(`inputs.${name}: upload ${id} is larger than the plan's max input size (${options.maxBytes} bytes)`);
  const destination = path.join(options.workDir, `input-${name.replace(/[^a-z0-9]/gi, "_")}${extensionOf(upload.filename ?? "")}`);
  try {
    await options.uploads.copyTo(id, destination);
  } catch {
    throw inputError(`inputs.${name}: upload ${id} could not be read (deleted meanwhile?)`);
  }
  return destination;
}

/**
 * Downloads every input of a job into `workDir` (URLs over the guarded agent, upload ids from the upload store) and
 * probes each the way `probe` says.
 * @throws JobFailure INPUT_ERROR when an input cannot be fetched, is too large or is not media; JobCancelledError.
 */
export async function downloadInputs(options: {
  /** URLs, or upload ids read from `uploads`. */
  urls: Record<string, string>;
  /** The upload store and the job's org; without it an upload id input fails with INPUT_ERROR. */
  uploads?: { store: UploadStore; orgId: string };
  workDir: string;
  maxBytes: number;
  timeoutMs: number;
  /** Past `timeoutMs`, the rate a URL download must keep up to go on (fetch-input.ts); none: `timeoutMs` for all. */
  minBytesPerSecond?: number;
  agent: InputAgent;
  signal: AbortSignal;
  /** The job type's {@link InputProbe} (providers/index.ts `inputProbeFor`): every caller says which. */
  probe: InputProbe;
}): Promise<{ inputs: Record<string, string>; probes: Record<string, MediaProbe> }> {
  const inputs: Record<string, string> = {};
  const probes: Record<string, MediaProbe> = {};
  for (const [name, url] of Object.entries(options.urls)) {
    let destination: string;
    if (isUploadId(url)) {
      if (!options.uploads) throw inputError(`inputs.${name}: uploads are not readable here`);
      destination = await readUpload({ name, id: url, orgId: options.uploads.orgId, uploads: options.uploads.store, maxBytes: options.maxBytes, workDir: options.workDir });
    } else {
      destination = path.join(options.workDir, `input-${name.replace(/[^a-z0-9]/gi, "_")}${inputExtension(url)}`);
      await fetchInput({
        name,
        url,
        destination,
        maxBytes: options.maxBytes,
        timeoutMs: options.timeoutMs,
        ...(options.minBytesPerSecond ? { minBytesPerSecond: options.minBytesPerSecond } : {}),
        agent: options.agent,
        signal: options.signal,
      });
    }
    inputs[name] = destination;
    try {
      probes[name] = await probeInput(destination, options.probe);
    } catch (error) {
      if (error instanceof NotMediaError) throw inputError(`inputs.${name}: is not a media file that can be read`);
      if (error instanceof MediaCapError) throw inputError(`inputs.${name}: ${error.message}`);
      throw error;
    }
  }
  return { inputs, probes };
}
