import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { promisify } from "node:util";

const exec = promisify(execFile);
const ffmpeg = (args: string[]) => exec("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", ...args]);

/** A raw H.264 elementary stream (`-f h264`): no container, so ffprobe finds no duration at all. */
export async function writeRawH264(file: string, seconds: number): Promise<void> {
  await ffmpeg(["-f", "lavfi", "-i", `testsrc=duration=${seconds}:size=320x240:rate=25`, "-c:v", "libx264", "-preset", "ultrafast", "-f", "h264", file]);
}

/** Matroska's Segment Info Duration element: ID 0x4489, then size 8 (0x88), then a big-endian double. */
const DURATION_ELEMENT = Buffer.from([0x44, 0x89, 0x88]);

/**
 * A Matroska file `seconds` long (video and a tone) whose Segment Duration says `claimedSeconds`: written by ffmpeg,
 * then the one Duration element patched in place (in milliseconds, the default TimestampScale). ffprobe then
 * reports the claimed duration; ffmpeg still decodes every frame.
 */
export async function writeMkvWithForgedDuration(file: string, seconds: number, claimedSeconds: number): Promise<void> {
  await ffmpeg([
    "-f", "lavfi", "-i", `testsrc=duration=${seconds}:size=320x240:rate=25`,
    "-f", "lavfi", "-i", `sine=frequency=440:duration=${seconds}`,
    "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-shortest", file,
  ]);
  const bytes = await readFile(file);
  // Segment Info comes before the tracks and clusters: search the header only, never the coded frames.
  const header = bytes.subarray(0, 4096);
  const at = header.indexOf(DURATION_ELEMENT);
  if (at < 0 || header.indexOf(DURATION_ELEMENT, at + 1) >= 0) throw new Error("expected exactly one Segment Duration element");
  bytes.writeDoubleBE(claimedSeconds * 1000, at + DURATION_ELEMENT.length);
  await writeFile(file, bytes);
}
