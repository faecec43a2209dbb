import path from "node:path";
import type { AudioExtractParams } from "@renderbus/job-types";
import { inputError } from "../job-failure.js";
import { capOutputDuration, type Provider } from "./provider.js";
import { runFfmpeg } from "./run-ffmpeg.js";

/** Container, extension and encoder per output format; AAC goes in an MPEG-4 audio file (.m4a). */
const FORMATS: Record<AudioExtractParams["format"], { extension: string; contentType: string; codec: string[] }> = {
  mp3: { extension: "mp3", contentType: "audio/mpeg", codec: ["-c:a", "libmp3lame"] },
  aac: { extension: "m4a", contentType: "audio/mp4", codec: ["-c:a", "aac"] },
  wav: { extension: "wav", contentType: "audio/wav", codec: ["-c:a", "pcm_s16le"] },
  opus: { extension: "opus", contentType: "audio/ogg", codec: ["-c:a", "libopus"] },
};

/** The ffmpeg arguments of an audio extraction (pure). */
export function buildAudioExtractArgs(params: AudioExtractParams, source: string, output: string): string[] {
  const bitrate = params.format === "wav" ? [] : ["-b:a", `${params.bitrate}k`];
  return ["-i", source, "-map", "0:a:0", "-vn", ...FORMATS[params.format].codec, ...bitrate, output];
}

/** `audio.extract`: the first audio track of the source. */
export const audioExtractProvider: Provider<AudioExtractParams> = {
  type: "audio.extract",
  async run({ params, inputs, probes, workDir, timeoutMs, signal, onSpawn, onProgress, maxOutputMs }) {
    if (!probes.source?.hasAudio) throw inputError("inputs.source: has no audio stream");
    const format = FORMATS[params.format];
    const output = path.join(workDir, `output.${format.extension}`);
    await runFfmpeg({ args: capOutputDuration(buildAudioExtractArgs(params, inputs.source!, output), maxOutputMs), workDir, timeoutMs, signal, onSpawn, onProgress });
    return { path: output, extension: format.extension, contentType: format.contentType };
  },
};
