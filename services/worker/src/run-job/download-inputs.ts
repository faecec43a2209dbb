import path from "node:path";
import { fetchInput } from "../fetch-input/fetch-input.js";
import type { InputAgent } from "../fetch-input/guarded-agent.js";
import { inputError } from "../job-failure.js";
import { MediaCapError } from "../media/media-caps.js";
import { NotMediaError, probeMedia, type MediaProbe } from "../media/probe.js";

function inputExtension(url: string): string {
  // ffmpeg picks demuxers partly by extension (subtitles especially), so keep a plain one when the URL has it.
  let pathname: string;
  try {
    pathname = new URL(url).pathname;
  } catch {
    return ""; // fetchInput reports the bad URL
  }
  const match = /\.([a-z0-9]{1,5})$/i.exec(pathname);
  return match ? `.${match[1]!.toLowerCase()}` : "";
}

/**
 * Downloads every input of a job into `workDir` and probes each with ffprobe.
 * @throws JobFailure INPUT_ERROR when an input cannot be fetched, is too large or is not media; JobCancelledError.
 */
export async function downloadInputs(options: {
  urls: Record<string, string>;
  workDir: string;
  maxBytes: number;
  timeoutMs: number;
  agent: InputAgent;
  signal: AbortSignal;
}): Promise<{ inputs: Record<string, string>; probes: Record<string, MediaProbe> }> {
  const inputs: Record<string, string> = {};
  const probes: Record<string, MediaProbe> = {};
  for (const [name, url] of Object.entries(options.urls)) {
    const destination = path.join(options.workDir, `input-${name.replace(/[^a-z0-9]/gi, "_")}${inputExtension(url)}`);
    await fetchInput({ name, url, destination, maxBytes: options.maxBytes, timeoutMs: options.timeoutMs, agent: options.agent, signal: options.signal });
    inputs[name] = destination;
    try {
      probes[name] = await probeMedia(destination);
    } catch (error) {
      if (error instanceof NotMediaError) throw inputError(`inputs.${name}: is not a media file that can be read`);
      if (error instanceof MediaCapError) throw inputError(`inputs.${name}: ${error.message}`);
      throw error;
    }
  }
  return { inputs, probes };
}
