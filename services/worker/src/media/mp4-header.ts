import { open, type FileHandle } from "node:fs/promises";

/** What ffprobe would report for an MP4/MOV file the worker's ffmpeg wrote: the container's duration, the first video track's size. */
export interface Mp4Summary {
  /** The movie header's duration (`mvhd`), in milliseconds as the probe rounds it. */
  durationMs: number;
  /** Of the first video track's first sample description (`stsd`); null without a video track. */
  width: number | null;
  height: number | null;
}

// The movie box of one of our outputs is a few KB to a few MB (sample tables of a long video); anything larger is not
// read here (the caller falls back to ffprobe).
const MAX_MOOV_BYTES = 64 * 1024 * 1024;
// Sample entry codes of video tracks whose stsd entry carries a VisualSampleEntry (width and height at bytes 24-27).
const VISUAL_ENTRY = /^(avc[1-4]|hvc1|hev1|av01|vp08|vp09|mp4v|jpeg|mjp[ab]|apcn|apch|apcs|apco|ap4h|ap4x)$/;

interface Box {
  type: string;
  /** Payload start and end (after the header), as offsets into the buffer or file. */
  start: number;
  end: number;
}

/** The boxes directly inside `buffer[start, end)` (pure). Returns null on a malformed size. */
function childBoxes(buffer: Buffer, start: number, end: number): Box[] | null {
  const boxes: Box[] = [];
  let offset = start;
  while (offset + 8 <= end) {
    let size = buffer.readUInt32BE(offset);
    const type = buffer.toString("latin1", offset + 4, offset + 8);
    let header = 8;
    if (size === 1) {
      if (offset + 16 > end) return null;
      size = Number(buffer.readBigUInt64BE(offset + 8));
      header = 16;
    } else if (size === 0) {
      size = end - offset;
    }
    if (size < header || offset + size > end) return null;
    boxes.push({ type, start: offset + header, end: offset + size });
    offset += size;
  }
  return boxes;
}

const child = (buffer: Buffer, parent: Box, type: string): Box | undefined => childBoxes(buffer, parent.start, parent.end)?.find((box) => box.type === type);

/**
 * Reads the movie box (`moov`) of a parsed MP4 file (pure): the duration as libavformat's mov demuxer sets the
 * container duration (mvhd duration rescaled to microseconds, rounded to nearest), which is what ffprobe prints,
 * and the coded size of the first video track. Null for anything this does not read the same way ffprobe does
 * (fragmented files, whose duration comes from the fragments; no movie header; an unknown video sample entry).
 */
export function summarizeMoov(moov: Buffer): Mp4Summary | null {
  const whole: Box = { type: "moov", start: 0, end: moov.length };
  const children = childBoxes(moov, whole.start, whole.end);
  if (!children) return null;
  if (children.some((box) => box.type === "mvex")) return null;
  const mvhd = children.find((box) => box.type === "mvhd");
  if (!mvhd || mvhd.end - mvhd.start < 20) return null;
  const version = moov.readUInt8(mvhd.start);
  let timescale: bigint;
  let duration: bigint;
  if (version === 1) {
    if (mvhd.end - mvhd.start < 32) return null;
    timescale = BigInt(moov.readUInt32BE(mvhd.start + 20));
    duration = moov.readBigUInt64BE(mvhd.start + 24);
  } else {
    timescale = BigInt(moov.readUInt32BE(mvhd.start + 12));
    duration = BigInt(moov.readUInt32BE(mvhd.start + 16));
  }
  if (timescale === 0n || duration >= 2n ** 63n) return null;
  // av_rescale(duration, AV_TIME_BASE, timescale): to whole microseconds, halves up; ffprobe prints those as seconds
  // with six decimals and the probe rounds that to milliseconds.
  const microseconds = Number((duration * 1_000_000n + timescale / 2n) / timescale);
  const durationMs = Math.round((microseconds / 1_000_000) * 1000);

  for (const trak of children.filter((box) => box.type === "trak")) {
    const mdia = child(moov, trak, "mdia");
    const hdlr = mdia && child(moov, mdia, "hdlr");
    if (!mdia || !hdlr || hdlr.end - hdlr.start < 12) continue;
    if (moov.toString("latin1", hdlr.start + 8, hdlr.start + 12) !== "vide") continue;
    const minf = child(moov, mdia, "minf");
    const stbl = minf && child(moov, minf, "stbl");
    const stsd = stbl && child(moov, stbl, "stsd");
    // stsd: version/flags (4), entry count (4), then the first entry: size (4), code (4), 6 reserved + data reference
    // index (8), 16 bytes of pre-defined/reserved, width (2), height (2).
    if (!stsd || stsd.end - stsd.start < 8 + 36) return null;
    const code = moov.toString("latin1", stsd.start + 12, stsd.start + 16);
    if (!VISUAL_ENTRY.test(code)) return null;
    const width = moov.readUInt16BE(stsd.start + 8 + 32);
    const height = moov.readUInt16BE(stsd.start + 8 + 34);
    if (width === 0 || height === 0) return null;
    return { durationMs, width, height };
  }
  return { durationMs, width: null, height: null };
}

async function readAt(file: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  const { bytesRead } = await file.read(buffer, 0, length, position);
  return buffer.subarray(0, bytesRead);
}

/**
 * Reads the summary of an MP4/MOV file the worker's ffmpeg wrote, without starting ffprobe: walks the top-level box
 * headers to the movie box (first with `+faststart`, last otherwise) and reads only that.
 * @returns null when the file is not one this reads the same way ffprobe does; the caller then probes it.
 */
export async function readMp4Summary(filePath: string): Promise<Mp4Summary | null> {
  const file = await open(filePath, "r");
  try {
    const { size: fileSize } = await file.stat();
    let offset = 0;
    while (offset + 8 <= fileSize) {
      const header = await readAt(file, offset, 16);
      if (header.length < 8) return null;
      let size = header.readUInt32BE(0);
      const type = header.toString("latin1", 4, 8);
      let headerSize = 8;
      if (size === 1) {
        if (header.length < 16) return null;
        size = Number(header.readBigUInt64BE(8));
        headerSize = 16;
      } else if (size === 0) {
        size = fileSize - offset;
      }
      if (size < headerSize || offset + size > fileSize) return null;
      if (type === "moov") {
        if (size - headerSize > MAX_MOOV_BYTES) return null;
        const moov = await readAt(file, offset + headerSize, size - headerSize);
        return moov.length === size - headerSize ? summarizeMoov(moov) : null;
      }
      offset += size;
    }
    return null;
  } finally {
    await file.close();
  }
}
