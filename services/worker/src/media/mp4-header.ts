import { open, type FileHandle } from "node:fs/promises";

/** What ffprobe would report for an MP4/MOV file the worker's ffmpeg wrote: the container's duration, the first video track's size. */
export interface Mp4Summary {
  /** The movie header's duration (`mvhd`), in milliseconds as the probe rounds it. */
  durationMs: number;
  /** Of the first video track's first sample description (`stsd`); null without a video track. */
  width: number | null;
  height: number | null;
}

/** One track of a movie box, as far as it is read here. */
export interface Mp4Track {
  /** The handler type (`hdlr`): `vide`, `soun`, `text`, `tmcd`, ... */
  handler: string;
  /** The first sample entry's code (`avc1`, `mp4a`, ...), or null without one. */
  code: string | null;
  /** Video tracks with a known visual sample entry: its coded size; otherwise null. */
  width: number | null;
  height: number | null;
  /**
   * Video tracks: samples x timescale / the summed sample durations (`stts`), which is how libavformat's mov demuxer
   * sets the average frame rate ffprobe prints; null without samples.
   */
  fps: number | null;
}

/** The movie box as read here: the container's duration and its tracks in file order. */
export interface MoovFacts {
  durationMs: number;
  tracks: Mp4Track[];
}

// The movie box of one of our outputs is a few KB to a few MB (sample tables of a long video); anything larger is not
// read here (the caller falls back to ffprobe).
const MAX_MOOV_BYTES = 64 * 1024 * 1024;
// Boxes read at one level, and top-level boxes walked in a file. Real files have a handful at each (ftyp, free, mdat,
// moov; mvhd, a few trak, udta, ...): a hostile one made of 8-byte boxes would otherwise have a 16 MiB movie box
// become two million objects in the worker's heap, or a 2 GB input two hundred million reads.
const MAX_BOXES_PER_LEVEL = 4096;
const MAX_TOP_LEVEL_BOXES = 1024;
// Sample entry codes of video tracks whose stsd entry carries a VisualSampleEntry (width and height at bytes 24-27).
const VISUAL_ENTRY = /^(avc[1-4]|hvc1|hev1|av01|vp08|vp09|mp4v|jpeg|mjp[ab]|apcn|apch|apcs|apco|ap4h|ap4x)$/;

interface Box {
  type: string;
  /** Payload start and end (after the header), as offsets into the buffer or file. */
  start: number;
  end: number;
}

/** The boxes directly inside `buffer[start, end)` (pure). Returns null on a malformed size or too many boxes. */
function childBoxes(buffer: Buffer, start: number, end: number): Box[] | null {
  const boxes: Box[] = [];
  let offset = start;
  while (offset + 8 <= end) {
    if (boxes.length === MAX_BOXES_PER_LEVEL) return null;
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
 * libavformat's average frame rate of a mov track: every `stts` entry's count and delta summed, then
 * count x timescale / duration (mov_read_stts, then av_reduce in mov_read_header). Null when it would set none.
 */
function trackFps(moov: Buffer, stbl: Box, timescale: number): number | null {
  const stts = child(moov, stbl, "stts");
  if (!stts || stts.end - stts.start < 8 || timescale === 0) return null;
  const entries = moov.readUInt32BE(stts.start + 4);
  if (entries > (stts.end - stts.start - 8) / 8) return null;
  let samples = 0;
  let duration = 0;
  for (let i = 0; i < entries; i += 1) {
    const count = moov.readUInt32BE(stts.start + 8 + i * 8);
    let delta = moov.readUInt32BE(stts.start + 12 + i * 8);
    // As the demuxer does: a last lone sample ten times longer than the average so far counts as an average one.
    if (i + 1 === entries && i > 0 && count === 1 && samples > 100 && Math.floor(delta / 10) > Math.floor(duration / samples)) delta = Math.floor(duration / samples);
    samples += count;
    duration += count * delta;
  }
  // Doubles: the sample count stays exact (2 million entries at most in a movie box read here); a duration sum past
  // 2^53, which only a crafted file has, rounds the rate by far less than a frame per second.
  return samples > 0 && duration > 0 ? (samples * timescale) / duration : null;
}

/** One `trak` (pure); null when its media box is not there to say what it is. */
function readTrack(moov: Buffer, trak: Box): Mp4Track | null {
  const mdia = child(moov, trak, "mdia");
  const hdlr = mdia && child(moov, mdia, "hdlr");
  const mdhd = mdia && child(moov, mdia, "mdhd");
  if (!mdia || !hdlr || hdlr.end - hdlr.start < 12 || !mdhd || mdhd.end - mdhd.start < 24) return null;
  const handler = moov.toString("latin1", hdlr.start + 8, hdlr.start + 12);
  // mdhd: version/flags (4), then creation and modification times (4 or 8 each), then the timescale.
  const timescale = moov.readUInt32BE(mdhd.start + (moov.readUInt8(mdhd.start) === 1 ? 20 : 12));
  const minf = child(moov, mdia, "minf");
  const stbl = minf && child(moov, minf, "stbl");
  const stsd = stbl && child(moov, stbl, "stsd");
  // stsd: version/flags (4), entry count (4), then the first entry: size (4), code (4), 6 reserved + data reference
  // index (8), 16 bytes of pre-defined/reserved, width (2), height (2).
  const code = stsd && stsd.end - stsd.start >= 16 ? moov.toString("latin1", stsd.start + 12, stsd.start + 16) : null;
  const track: Mp4Track = { handler, code, width: null, height: null, fps: null };
  if (handler !== "vide" || !stbl || !stsd || code === null || !VISUAL_ENTRY.test(code) || stsd.end - stsd.start < 8 + 36) return track;
  const width = moov.readUInt16BE(stsd.start + 8 + 32);
  const height = moov.readUInt16BE(stsd.start + 8 + 34);
  if (width === 0 || height === 0) return track;
  return { ...track, width, height, fps: trackFps(moov, stbl, timescale) };
}

/**
 * Reads the movie box (`moov`) of an MP4/MOV file (pure): the duration as libavformat's mov demuxer sets the
 * container duration (mvhd duration rescaled to microseconds, rounded to nearest), which is what ffprobe prints,
 * and every track's kind, first sample entry, coded size and frame rate. Null for anything this does not read the
 * same way ffprobe does (fragmented files, whose duration comes from the fragments; no movie header; a malformed box).
 */
export function readMoov(moov: Buffer): MoovFacts | null {
  const children = childBoxes(moov, 0, moov.length);
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
  const tracks: Mp4Track[] = [];
  for (const trak of children.filter((box) => box.type === "trak")) {
    const track = readTrack(moov, trak);
    if (!track) return null;
    tracks.push(track);
  }
  return { durationMs, tracks };
}

/**
 * The container's duration and the first video track's coded size (pure); null for what {@link readMoov} does not
 * read, or a first video track whose sample entry is not a known visual one.
 */
export function summarizeMoov(moov: Buffer): Mp4Summary | null {
  const facts = readMoov(moov);
  if (!facts) return null;
  const video = facts.tracks.find((track) => track.handler === "vide");
  if (!video) return { durationMs: facts.durationMs, width: null, height: null };
  if (video.width === null || video.height === null) return null;
  return { durationMs: facts.durationMs, width: video.width, height: video.height };
}

async function readAt(file: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  const { bytesRead } = await file.read(buffer, 0, length, position);
  return buffer.subarray(0, bytesRead);
}

/** How {@link readMoovBox} walks a file. */
interface WalkOptions {
  /** A movie box larger than this is not read (null). */
  maxMoovBytes: number;
  /**
   * Only a file whose first box is `ftyp` and whose top-level boxes tile it to the last byte: a file that anything
   * but libavformat's mov demuxer could claim, or that was cut short, is left to ffprobe.
   */
  strict: boolean;
}

/**
 * Walks the top-level box headers of a file to the movie box (first with `+faststart`, last otherwise) and reads
 * only that; null when the walk meets a malformed size, too many boxes or no movie box.
 */
async function readMoovBox(filePath: string, { maxMoovBytes, strict }: WalkOptions): Promise<{ moov: Buffer; fileSize: number } | null> {
  const file = await open(filePath, "r");
  try {
    const { size: fileSize } = await file.stat();
    let offset = 0;
    let moov: Buffer | null = null;
    for (let boxes = 0; offset + 8 <= fileSize; boxes += 1) {
      if (boxes === MAX_TOP_LEVEL_BOXES) return null;
      const header = await readAt(file, offset, 16);
      if (header.length < 8) return null;
      let size = header.readUInt32BE(0);
      const type = header.toString("latin1", 4, 8);
      if (strict && offset === 0 && type !== "ftyp") return null;
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
        if (moov || size - headerSize > maxMoovBytes) return null;
        moov = await readAt(file, offset + headerSize, size - headerSize);
        if (moov.length !== size - headerSize) return null;
        if (!strict) return { moov, fileSize };
      }
      offset += size;
    }
    return moov === null || (strict && offset !== fileSize) ? null : { moov, fileSize };
  } finally {
    await file.close();
  }
}

/**
 * Reads the summary of an MP4/MOV file the worker's ffmpeg wrote, without starting ffprobe.
 * @returns null when the file is not one this reads the same way ffprobe does; the caller then probes it.
 */
export async function readMp4Summary(filePath: string): Promise<Mp4Summary | null> {
  const read = await readMoovBox(filePath, { maxMoovBytes: MAX_MOOV_BYTES, strict: false });
  return read && summarizeMoov(read.moov);
}

/**
 * Reads the movie box of a job's input (anyone's file), without starting ffprobe: only a file that starts with
 * `ftyp`, whose top-level boxes tile it exactly, with a movie box of at most `maxMoovBytes`; with the file's size,
 * which the walk has read anyway.
 * @returns null for anything else; the caller then probes it with ffprobe.
 */
export async function readInputMoov(filePath: string, maxMoovBytes: number): Promise<(MoovFacts & { fileSize: number }) | null> {
  const read = await readMoovBox(filePath, { maxMoovBytes, strict: true });
  const facts = read && readMoov(read.moov);
  return facts ? { ...facts, fileSize: read.fileSize } : null;
}
