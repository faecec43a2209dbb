import { checkMediaCaps, mediaCaps, type MediaCaps } from "./media-caps.js";
import { readInputMoov } from "./mp4-header.js";
import { probePictureHeader } from "./picture-probe.js";
import { roundFps, type MediaProbe, type ProbedStream } from "./probe.js";

/**
 * The largest movie box of an input read in-process. A two-hour H.264 + AAC movie's sample tables are a few MB;
 * larger ones go to ffprobe, so one job's probe never holds more than this in the worker's memory.
 */
export const MAX_INPUT_MOOV_BYTES = 16 * 1024 * 1024;

// What ffprobe names libavformat's mov demuxer, the one that reads every file accepted here.
const MOV_FORMAT = { name: "mov,mp4,m4a,3gp,3g2,mj2", longName: "QuickTime / MOV" };
// Track handlers read here, as ffprobe types their streams: a timecode track (cameras, editors) is a data stream.
const STREAM_TYPES: Record<string, ProbedStream["type"]> = { vide: "video", soun: "audio", tmcd: "data" };

/**
 * Probes a job's input from its MP4/MOV movie header, in the worker's process, without starting ffprobe (~150-200 ms
 * of loading libav* and the sandbox per input). Reads box headers and a few fixed fields, decodes nothing and follows
 * no reference, so a hostile file can at worst make it return null; the movie box read is capped at
 * {@link MAX_INPUT_MOOV_BYTES}. The sandboxed ffmpeg run that follows still applies every whitelist and cap.
 * @returns null (the caller runs ffprobe) for anything not read here the way ffprobe reads it: a file that does not
 *   start with `ftyp` or whose boxes do not tile it, a fragmented or larger movie, a track other than video,
 *   audio or timecode, a video sample entry not known to carry its size, no stated duration.
 * @throws MediaCapError when a video track is over the pixel or frame-rate cap, as the ffprobe path does.
 */
export async function probeMp4Header(filePath: string, caps: MediaCaps = mediaCaps()): Promise<MediaProbe | null> {
  const facts = await readInputMoov(filePath, MAX_INPUT_MOOV_BYTES);
  if (!facts || facts.durationMs <= 0 || facts.tracks.length === 0) return null;
  const streams: ProbedStream[] = [];
  for (const [index, track] of facts.tracks.entries()) {
    const type = STREAM_TYPES[track.handler];
    if (type === undefined || (type === "video" && track.width === null)) return null;
    streams.push({
      index,
      type,
      codec: null,
      width: track.width,
      height: track.height,
      fps: type === "video" && track.fps !== null ? roundFps(track.fps) : null,
      sampleRate: null,
      channels: null,
      durationMs: null,
      bitRate: null,
      language: null,
    });
  }
  checkMediaCaps(streams, caps);
  const video = streams.find((stream) => stream.type === "video");
  return {
    format: { ...MOV_FORMAT, durationMs: facts.durationMs, size: facts.fileSize, bitRate: null, tags: {} },
    streams,
    width: video?.width ?? null,
    height: video?.height ?? null,
    durationMs: facts.durationMs,
    hasVideo: video !== undefined,
    hasAudio: streams.some((stream) => stream.type === "audio"),
    readBy: "header",
  };
}

/** An input read from its header: an MP4/MOV movie (probeMp4Header) or a picture (probePictureHeader); null for ffprobe. */
export async function probeInputHeader(filePath: string, caps: MediaCaps = mediaCaps()): Promise<MediaProbe | null> {
  return (await probeMp4Header(filePath, caps)) ?? (await probePictureHeader(filePath, caps));
}
