import path from "node:path";
import { readJpegHeader } from "./jpeg-header.js";
import { checkMediaCaps, mediaCaps, type MediaCaps } from "./media-caps.js";
import type { PictureHeader } from "./picture-header.js";
import { readPngHeader } from "./png-header.js";
import type { MediaProbe, ProbedStream } from "./probe.js";

/** How ffprobe reads a picture: which demuxer, and the one frame's duration it states (none for a pipe demuxer). */
interface PictureFormat {
  name: string;
  longName: string;
  durationMs: number | null;
}
// What ffprobe reports of a picture, by its name's extension (lower-cased; "" for none) and size. A PNG is png_pipe
// whatever it is called but `.apng` (another demuxer). A JPEG without an extension is jpeg_pipe, without a duration;
// one called `.jpg` or `.jpeg` is image2, one 40 ms frame, unless its end (EOI) lies in the first 2,048 bytes that
// libavformat probes, where jpeg_pipe outscores image2's extension match: such small ones are left to ffprobe. Both
// demuxers state 25 fps, their default rate.
const PNG_PIPE: PictureFormat = { name: "png_pipe", longName: "piped png sequence", durationMs: null };
const JPEG_PIPE: PictureFormat = { name: "jpeg_pipe", longName: "piped jpeg sequence", durationMs: null };
const IMAGE2: PictureFormat = { name: "image2", longName: "image2 sequence", durationMs: 40 };
const FIRST_PROBE_BYTES = 2048;
const PICTURE_FPS = 25;
const PICTURES: Array<{ codec: string; read: (filePath: string) => Promise<PictureHeader | null>; format: (extension: string, fileSize: number) => PictureFormat | null }> = [
  { codec: "png", read: readPngHeader, format: (extension) => ([".png", ""].includes(extension) ? PNG_PIPE : null) },
  {
    codec: "mjpeg",
    read: readJpegHeader,
    format: (extension, fileSize) => (extension === "" ? JPEG_PIPE : [".jpg", ".jpeg"].includes(extension) && fileSize > FIRST_PROBE_BYTES ? IMAGE2 : null),
  },
];

/**
 * Probes a picture input (a watermark's image) from its header, in the worker's process, as ffprobe reports it: one
 * video stream of the picture's codec and size. A PNG (readPngHeader) named `.png` or without an extension, a JPEG
 * (readJpegHeader) named `.jpg` or `.jpeg` (over 2 KiB) or without an extension (an upload's name may have none);
 * other names can select another demuxer, and are left to ffprobe.
 * @returns null (the caller runs ffprobe) for anything else.
 * @throws MediaCapError when the picture is over the pixel cap, as the ffprobe path does.
 */
export async function probePictureHeader(filePath: string, caps: MediaCaps = mediaCaps()): Promise<MediaProbe | null> {
  const extension = path.extname(filePath).toLowerCase();
  for (const { codec, read, format: formatOf } of PICTURES) {
    const header = await read(filePath);
    const format = header && formatOf(extension, header.fileSize);
    if (!header || !format) continue;
    const { width, height, fileSize } = header;
    const streams: ProbedStream[] = [
      { index: 0, type: "video", codec, width, height, fps: PICTURE_FPS, sampleRate: null, channels: null, durationMs: format.durationMs, bitRate: null, language: null },
    ];
    checkMediaCaps(streams, caps);
    return {
      format: { name: format.name, longName: format.longName, durationMs: format.durationMs, size: fileSize, bitRate: null, tags: {} },
      streams,
      width,
      height,
      durationMs: format.durationMs,
      hasVideo: true,
      hasAudio: false,
      readBy: "header",
    };
  }
  return null;
}
