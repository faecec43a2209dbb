import { mediaCaps, type MediaCaps } from "./media-caps.js";

/**
 * The demuxers ffprobe and ffmpeg may pick for a job's files: the containers, elementary streams, images and
 * subtitles the job types take and produce. Left out on purpose: every format that opens other files or URLs by
 * name (`hls`, `dash`, `concat`, playlists, `image2` patterns are refused by path below, ...) and exotic ones nobody
 * needs (a smaller parser surface). Names are ffmpeg's demuxer names; one that matches any name of a demuxer with
 * several (`mov` for "mov,mp4,m4a,3gp,3g2,mj2") allows it.
 */
export const DEMUXER_WHITELIST = [
  "mov", "matroska", "webm", "avi", "flv", "mpegts", // video containers (mp4, m4a, 3gp, mov are "mov")
  "h264", "hevc", // raw streams
  "mp3", "aac", "wav", "ogg", "flac", // audio
  "image2", "png_pipe", "jpeg_pipe", "webp_pipe", "bmp_pipe", "gif", // single pictures
  "srt", "webvtt", // subtitles (caption.burn)
].join(",");

/** Only local files and pipes: a demuxer cannot open http, tcp, data, concat, subfile or any other protocol. */
export const PROTOCOL_WHITELIST = "file,pipe";

/**
 * A media path the worker made itself. Paths with pattern characters are refused because `image2` would read them
 * as sequences (`%d`) or globs of other files.
 */
export function isPlainMediaPath(filePath: string): boolean {
  return /^[A-Za-z0-9_./-]+$/.test(filePath);
}

/** Options that go before every input of ffprobe and ffmpeg (pure). */
export function inputOptions(caps: MediaCaps = mediaCaps()): string[] {
  return [
    "-protocol_whitelist", PROTOCOL_WHITELIST,
    "-format_whitelist", DEMUXER_WHITELIST,
    // Decoders refuse bigger pictures, even ones that appear mid-stream after a small first frame.
    "-max_pixels", String(caps.maxPixels),
  ];
}
