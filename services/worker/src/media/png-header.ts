import { open } from "node:fs/promises";
import { crc32 } from "node:zlib";
import type { PictureHeader } from "./picture-header.js";

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** The signature and the IHDR chunk (length, type, 13 bytes of fields, CRC). */
const HEAD_BYTES = 8 + 25;
/** The bit depths each PNG colour type allows (greyscale, truecolour, indexed, greyscale + alpha, truecolour + alpha). */
const BIT_DEPTHS: Record<number, readonly number[]> = { 0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16] };
const INDEXED = 3;
const MAX_LENGTH = 0x7fffffff;
/** Chunks walked before the first IDAT (text, colour profile, palette...); a file with more is left to ffprobe. */
export const MAX_CHUNKS_BEFORE_IDAT = 64;

/**
 * The picture size of a PNG file from its IHDR chunk, read strictly: the signature; an IHDR whose every field is
 * one the format allows and whose CRC matches; then the chunk headers up to the first IDAT (at most
 * {@link MAX_CHUNKS_BEFORE_IDAT}), each whole inside the file, with a palette before it for an indexed picture.
 * ffprobe decodes the first frame and states no size for a file cut before its first IDAT ends, so neither does this.
 * @returns null for anything else.
 */
export async function readPngHeader(filePath: string): Promise<PictureHeader | null> {
  const handle = await open(filePath, "r");
  try {
    const { size } = await handle.stat();
    const head = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await handle.read(head, 0, HEAD_BYTES, 0);
    if (bytesRead < HEAD_BYTES || !head.subarray(0, 8).equals(SIGNATURE)) return null;
    if (head.readUInt32BE(8) !== 13 || head.toString("latin1", 12, 16) !== "IHDR") return null;
    const width = head.readUInt32BE(16);
    const height = head.readUInt32BE(20);
    const [depth, colourType, compression, filter, interlace] = head.subarray(24, 29);
    if (width === 0 || height === 0 || width > MAX_LENGTH || height > MAX_LENGTH) return null;
    if (!BIT_DEPTHS[colourType!]?.includes(depth!) || compression !== 0 || filter !== 0 || interlace! > 1) return null;
    if (crc32(head.subarray(12, 29)) !== head.readUInt32BE(29)) return null;

    const chunk = Buffer.alloc(8);
    let palette = false;
    for (let at = HEAD_BYTES, walked = 0; walked < MAX_CHUNKS_BEFORE_IDAT; walked += 1) {
      if ((await handle.read(chunk, 0, 8, at)).bytesRead < 8) return null;
      const length = chunk.readUInt32BE(0);
      const type = chunk.toString("latin1", 4, 8);
      if (length > MAX_LENGTH || at + 12 + length > size) return null;
      if (type === "IDAT") return colourType === INDEXED && !palette ? null : { width, height, fileSize: size };
      if (type === "IEND" || type === "IHDR") return null;
      palette ||= type === "PLTE";
      at += 12 + length;
    }
    return null;
  } finally {
    await handle.close();
  }
}
