import { open, type FileHandle } from "node:fs/promises";
import type { PictureHeader } from "./picture-header.js";

const SOI = 0xd8;
const EOI = 0xd9;
const SOS = 0xda;
/** Baseline and extended sequential Huffman frames: the ones read here. Every other frame type is left to ffprobe. */
const READ_FRAMES = new Set([0xc0, 0xc1]);
const OTHER_FRAMES = new Set([0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]);
const NOT_SEGMENTS = new Set([SOI, EOI, SOS, 0xc8, 0xff]);
/** Segments walked before the frame header (APPn, DQT, DHT, COM...); a file with more is left to ffprobe. */
export const MAX_SEGMENTS_BEFORE_FRAME = 64;

/**
 * The picture size of a JPEG file from its frame header, read strictly: SOI, then marker segments each whole inside
 * the file up to a baseline or extended sequential frame header (SOF0/SOF1, at most {@link MAX_SEGMENTS_BEFORE_FRAME}
 * segments before it) of 8-bit samples, one component or three with sampling factors of 1 to 4, a size stated in the
 * header; and an EOI as the file's last two bytes, so a file cut short is not read here.
 * @returns null for anything else (progressive, lossless and arithmetic-coded frames, CMYK, 12-bit samples...).
 */
export async function readJpegHeader(filePath: string): Promise<PictureHeader | null> {
  const handle = await open(filePath, "r");
  try {
    const { size } = await handle.stat();
    const bytes = (length: number, at: number) => readExactly(handle, length, at);
    const start = await bytes(2, 0);
    const end = await bytes(2, size - 2);
    if (!start || !end || start[0] !== 0xff || start[1] !== SOI || end[0] !== 0xff || end[1] !== EOI) return null;
    for (let at = 2, walked = 0; walked <= MAX_SEGMENTS_BEFORE_FRAME; walked += 1) {
      const header = await bytes(4, at);
      if (!header || header[0] !== 0xff) return null;
      const marker = header[1]!;
      const length = header.readUInt16BE(2);
      if (length < 2 || at + 2 + length > size - 2) return null;
      if (READ_FRAMES.has(marker)) return frameSize(await bytes(length - 2, at + 4), size);
      // Anything but a segment with a length is left to ffprobe: the scan or the end before a frame header, a restart
      // marker, fill bytes (0xFF 0xFF), the reserved JPG marker (0xC8), TEM and reserved codes.
      if (OTHER_FRAMES.has(marker) || NOT_SEGMENTS.has(marker) || (marker >= 0xd0 && marker <= 0xd7) || marker < 0xc0) return null;
      at += 2 + length;
    }
    return null;
  } finally {
    await handle.close();
  }
}

/** The size a frame header (after its length) states, when its samples and components are ones read here. */
function frameSize(frame: Buffer | null, fileSize: number): PictureHeader | null {
  if (!frame || frame.length < 6) return null;
  const precision = frame[0];
  const height = frame.readUInt16BE(1);
  const width = frame.readUInt16BE(3);
  const components = frame[5]!;
  if (precision !== 8 || height === 0 || width === 0 || (components !== 1 && components !== 3) || frame.length !== 6 + 3 * components) return null;
  // ffprobe states no size for a sampling factor outside 1..4 (its decoder refuses the frame header).
  for (let component = 0; component < components; component += 1) {
    const sampling = frame[6 + 3 * component + 1]!;
    const [horizontal, vertical] = [sampling >> 4, sampling & 0x0f];
    if (horizontal < 1 || horizontal > 4 || vertical < 1 || vertical > 4) return null;
  }
  return { width, height, fileSize };
}

async function readExactly(handle: FileHandle, length: number, at: number): Promise<Buffer | null> {
  if (at < 0 || length < 0) return null;
  const buffer = Buffer.alloc(length);
  const { bytesRead } = await handle.read(buffer, 0, length, at);
  return bytesRead === length ? buffer : null;
}
