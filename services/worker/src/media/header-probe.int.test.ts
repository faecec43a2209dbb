import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { crc32 } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inputProbeFor } from "../providers/index.js";
import { probeInputHeader, probeMp4Header } from "./header-probe.js";
import { probePictureHeader } from "./picture-probe.js";
import { DEFAULT_MEDIA_CAPS, MediaCapError } from "./media-caps.js";
import { readInputMoov, readMoov } from "./mp4-header.js";
import { MAX_SEGMENTS_BEFORE_FRAME } from "./jpeg-header.js";
import { MAX_CHUNKS_BEFORE_IDAT } from "./png-header.js";
import { probeMedia, type MediaProbe } from "./probe.js";

const exec = promisify(execFile);
let dir: string;
const file = (name: string) => path.join(dir, name);
const ffmpeg = (args: string[]) => exec("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", ...args]);
const VIDEO = (seconds: number, size: string, rate: string) => ["-f", "lavfi", "-i", `testsrc=duration=${seconds}:size=${size}:rate=${rate}`];
const TONE = (seconds: number) => ["-f", "lavfi", "-i", `sine=frequency=440:duration=${seconds}`];

/** Inputs as customers send them: the codecs and containers of the mov family, with and without faststart, odd rates and sizes. */
const READ: Array<{ name: string; args: string[] }> = [
  { name: "h264-aac.mp4", args: [...VIDEO(3.3, "642x362", "30"), ...TONE(3.3), "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-shortest"] },
  { name: "h264-faststart-ntsc.mp4", args: [...VIDEO(2, "320x240", "24000/1001"), ...TONE(2), "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-shortest", "-movflags", "+faststart"] },
  { name: "h265-aac.mov", args: [...VIDEO(1, "320x180", "25"), ...TONE(1), "-c:v", "libx265", "-preset", "ultrafast", "-tag:v", "hvc1", "-x265-params", "log-level=error", "-c:a", "aac", "-shortest"] },
  { name: "mjpeg.mov", args: [...VIDEO(1, "160x120", "15"), "-c:v", "mjpeg", "-q:v", "5"] },
  { name: "mpeg4-part2.mp4", args: [...VIDEO(1, "176x144", "12.5"), "-c:v", "mpeg4"] },
  { name: "vp9.mp4", args: [...VIDEO(1, "160x90", "10"), "-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8"] },
  { name: "anamorphic.mp4", args: [...VIDEO(1, "352x288", "25"), "-vf", "setsar=16/11", "-c:v", "libx264", "-preset", "ultrafast"] },
  { name: "capped.mp4", args: [...VIDEO(4, "128x72", "60"), ...TONE(4), "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-t", "2.345"] },
  { name: "audio-only.m4a", args: [...TONE(2.5), "-c:a", "aac", "-b:a", "64k"] },
  { name: "timecode-track.mov", args: [...VIDEO(1, "160x90", "25"), ...TONE(1), "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-timecode", "01:00:00:00"] },
  { name: "two-video-tracks.mp4", args: [...VIDEO(1, "160x90", "25"), ...VIDEO(1, "320x180", "50"), "-map", "0:v", "-map", "1:v", "-c:v", "libx264", "-preset", "ultrafast"] },
];

/** Files the header reader leaves to ffprobe. */
const LEFT: Array<{ name: string; args: string[] }> = [
  { name: "webm.webm", args: [...VIDEO(1, "160x90", "25"), "-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8"] },
  { name: "fragmented.mp4", args: [...VIDEO(1, "160x90", "25"), "-c:v", "libx264", "-preset", "ultrafast", "-movflags", "frag_keyframe+empty_moov"] },
  { name: "with-subtitles.mp4", args: [...VIDEO(2, "160x90", "25"), "-i", "SUBS", "-map", "0:v", "-map", "1:s", "-c:v", "libx264", "-preset", "ultrafast", "-c:s", "mov_text"] },
];

/**
 * Pictures as customers send them for a watermark, as [name, size, pixel format]: every PNG colour type and depth
 * ffmpeg writes; JPEGs in the samplings encoders write and greyscale, under both extensions; odd sizes. `tiny.jpg` is
 * small enough for ffprobe to read it as jpeg_pipe despite its name.
 */
const PICTURES: Array<[name: string, size: string, pixelFormat: string]> = [
  ["rgb.png", "321x123", "rgb24"],
  ["rgba.png", "640x360", "rgba"],
  ["grey.png", "99x77", "gray"],
  ["grey16.png", "64x48", "gray16be"],
  ["rgba64.png", "32x32", "rgba64be"],
  ["palette.png", "200x100", "pal8"],
  ["one-bit.png", "17x9", "monob"],
  ["yuv420.jpg", "321x123", "yuvj420p"],
  ["yuv422.jpeg", "160x90", "yuvj422p"],
  ["yuv444.JPG", "99x77", "yuvj444p"],
  ["grey.jpg", "200x150", "gray"],
  ["tiny.jpg", "64x48", "yuvj420p"],
];
const PICTURE = (size: string, pixelFormat: string) => ["-f", "lavfi", "-i", `testsrc=size=${size}:duration=1`, "-frames:v", "1", "-pix_fmt", pixelFormat];
const PNGS = PICTURES.map(([name]) => name).filter((name) => name.endsWith(".png"));
const JPEGS = PICTURES.map(([name]) => name).filter((name) => !name.endsWith(".png") && name !== "tiny.jpg");

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "rb-header-probe-"));
  await Promise.all(PICTURES.map(([name, size, pixelFormat]) => ffmpeg([...PICTURE(size, pixelFormat), file(name)])));
  const jpeg = await readFile(file("yuv420.jpg"));
  await writeFile(file("input-photo"), jpeg);
  await writeFile(file("tiny-photo"), await readFile(file("tiny.jpg")));
  await writeFile(file("photo.png"), jpeg);
  await writeFile(file("photo.jpe"), jpeg);
  // A camera's EXIF block: a 30 KB APP1 segment before the frame header.
  const app1 = Buffer.alloc(4 + 30_000, 0x45);
  app1.writeUInt16BE(0xffe1, 0);
  app1.writeUInt16BE(2 + 30_000, 2);
  await writeFile(file("exif.jpg"), Buffer.concat([jpeg.subarray(0, 2), app1, jpeg.subarray(2)]));
  await writeFile(file("cut.jpg"), jpeg.subarray(0, jpeg.length - 100));
  const sofAt = jpeg.indexOf(Buffer.from([0xff, 0xc0]));
  const patched = (patch: (copy: Buffer) => void) => {
    const copy = Buffer.from(jpeg);
    patch(copy);
    return copy;
  };
  await writeFile(file("progressive-marker.jpg"), patched((copy) => (copy[sofAt + 1] = 0xc2)));
  await writeFile(file("twelve-bit.jpg"), patched((copy) => (copy[sofAt + 4] = 12)));
  // A fill byte before a marker (0xFF 0xFF): legal, and left to ffprobe.
  await writeFile(file("fill-byte.jpg"), Buffer.concat([jpeg.subarray(0, 2), Buffer.from([0xff]), jpeg.subarray(2)]));
  // Comment segments before the frame header: a few are walked, more than the bound are left to ffprobe.
  const comments = (count: number) => Buffer.concat(Array.from({ length: count }, () => Buffer.from([0xff, 0xfe, 0x00, 0x05, 0x68, 0x69, 0x21])));
  await writeFile(file("some-comments.jpg"), Buffer.concat([jpeg.subarray(0, 2), comments(MAX_SEGMENTS_BEFORE_FRAME - 8), jpeg.subarray(2)]));
  await writeFile(file("many-comments.jpg"), Buffer.concat([jpeg.subarray(0, 2), comments(MAX_SEGMENTS_BEFORE_FRAME), jpeg.subarray(2)]));
  // A luma sampling factor of 0: ffprobe's decoder refuses the frame header and states no size.
  await writeFile(file("zero-sampling.jpg"), patched((copy) => (copy[sofAt + 11] = 0x01)));
  const png = await readFile(file("rgb.png"));
  // An upload keeps its name's extension, and a name may have none.
  await writeFile(file("input-image"), png);
  await writeFile(file("animated.apng"), png);
  await writeFile(file("named.jpg"), png);
  // Cut before its first IDAT chunk ends (inside it, or right after IHDR): ffprobe states no size for either.
  const idatEnd = png.indexOf("IDAT") + 4 + png.readUInt32BE(png.indexOf("IDAT") - 4) + 4;
  await writeFile(file("cut-in-idat.png"), png.subarray(0, idatEnd - 10));
  await writeFile(file("cut-after-ihdr.png"), png.subarray(0, 33));
  // Without its IEND (cut after the image data): ffprobe reads it, and so does the header.
  await writeFile(file("no-iend.png"), png.subarray(0, idatEnd));
  const badCrc = Buffer.from(png);
  badCrc[32] = badCrc[32]! ^ 0xff;
  await writeFile(file("bad-crc.png"), badCrc);
  await writeFile(file("subs.srt"), "1\n00:00:00,000 --> 00:00:01,000\nHello\n");
  await Promise.all([...READ, ...LEFT].map(({ name, args }) => ffmpeg([...args.map((arg) => (arg === "SUBS" ? file("subs.srt") : arg)), file(name)])));
  // 240 frames per second: over the default frame rate cap.
  await ffmpeg([...VIDEO(1, "160x90", "240"), "-c:v", "libx264", "-preset", "ultrafast", file("fast.mp4")]);
  const whole = await readFile(file("h264-aac.mp4"));
  // The movie box is at the end: cut short, the boxes no longer tile the file.
  await writeFile(file("truncated.mp4"), whole.subarray(0, whole.length - 100));
  await writeFile(file("trailing-junk.mp4"), Buffer.concat([whole, Buffer.from("junk after the last box")]));
}, 120_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** What a job uses of a probe, and what the header reader promises to read as ffprobe does. */
const usedFacts = (probe: MediaProbe) => ({
  durationMs: probe.durationMs,
  formatDurationMs: probe.format.durationMs,
  formatName: probe.format.name,
  size: probe.format.size,
  width: probe.width,
  height: probe.height,
  hasVideo: probe.hasVideo,
  hasAudio: probe.hasAudio,
  streams: probe.streams.map((stream) => ({ index: stream.index, type: stream.type, width: stream.width, height: stream.height, fps: stream.fps })),
});

/**
 * Probes 300 copies of `whole`, each damaged by `damage` with a repeatable xorshift sequence from `seed`, and counts
 * the copies read and the ones left to ffprobe; anything thrown but a cap error fails the test.
 */
async function probeDamagedCopies(
  whole: Buffer,
  name: string,
  probe: (filePath: string) => Promise<MediaProbe | null>,
  seed: number,
  damage: (copy: Buffer, random: () => number) => void,
): Promise<{ read: number; left: number }> {
  const random = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 2 ** 32;
  };
  const outcomes = { read: 0, left: 0 };
  for (let round = 0; round < 300; round += 1) {
    const damaged = Buffer.from(whole);
    damage(damaged, random);
    await writeFile(file(name), damaged);
    const probed = await probe(file(name)).catch((error: unknown) => {
      if (error instanceof MediaCapError) return null;
      throw error;
    });
    outcomes[probed ? "read" : "left"] += 1;
  }
  return outcomes;
}

describe("an input probed from its MP4/MOV movie header", () => {
  it.each(READ)("$name: the same duration, kinds, sizes and frame rates as ffprobe reports", async ({ name }) => {
    const [header, ffprobe] = await Promise.all([probeMp4Header(file(name)), probeMedia(file(name))]);
    expect(header, "read from the header, not left to ffprobe").not.toBeNull();
    expect(header!.readBy).toBe("header");
    expect(ffprobe.readBy).toBe("ffprobe");
    expect(usedFacts(header!)).toEqual(usedFacts(ffprobe));
  });

  it.each([...LEFT.map(({ name }) => name), "truncated.mp4", "trailing-junk.mp4"])("%s is left to ffprobe", async (name) => {
    expect(await probeMp4Header(file(name))).toBeNull();
  });

  it("a movie box over the size it may hold in memory is left to ffprobe", async () => {
    expect(await readInputMoov(file("h264-aac.mp4"), 16 * 1024 * 1024)).not.toBeNull();
    expect(await readInputMoov(file("h264-aac.mp4"), 100)).toBeNull();
  });

  it("a file or movie box made of thousands of tiny boxes is left to ffprobe, not walked box by box", async () => {
    const whole = await readFile(file("h264-faststart-ntsc.mp4"));
    const ftypEnd = whole.readUInt32BE(0);
    const moovEnd = ftypEnd + whole.readUInt32BE(ftypEnd);
    expect(whole.toString("latin1", ftypEnd + 4, ftypEnd + 8)).toBe("moov");
    const tiny = (count: number) => Buffer.concat(Array.from({ length: count }, () => Buffer.from([0, 0, 0, 8, 0x66, 0x72, 0x65, 0x65]))); // "free"
    // 200,000 empty boxes between ftyp and moov: a well-formed file, 200,000 reads to walk.
    await writeFile(file("many-boxes.mp4"), Buffer.concat([whole.subarray(0, ftypEnd), tiny(200_000), whole.subarray(ftypEnd)]));
    expect(await probeMp4Header(file("many-boxes.mp4"))).toBeNull();
    // 5,000 empty boxes inside the movie box (a well-formed one, or 16 MiB of them: two million objects on the heap).
    const moovPayload = whole.subarray(ftypEnd + 8, moovEnd);
    expect(readMoov(moovPayload)).not.toBeNull();
    expect(readMoov(Buffer.concat([tiny(5_000), moovPayload]))).toBeNull();
  });

  it("a video over the frame rate cap fails with the same error as ffprobe's path", async () => {
    const [header, ffprobe] = await Promise.allSettled([probeMp4Header(file("fast.mp4")), probeMedia(file("fast.mp4"))]);
    expect(header.status).toBe("rejected");
    expect((header as PromiseRejectedResult).reason).toBeInstanceOf(MediaCapError);
    expect((header as PromiseRejectedResult).reason).toEqual((ffprobe as PromiseRejectedResult).reason);
  });

  it("a damaged movie box never throws anything but a cap error: it is read or left to ffprobe", async () => {
    const whole = await readFile(file("h264-faststart-ntsc.mp4"));
    const moovAt = whole.indexOf("moov") - 4;
    const moovEnd = moovAt + whole.readUInt32BE(moovAt);
    const outcomes = await probeDamagedCopies(whole, "damaged.mp4", probeMp4Header, 0x2545f491, (damaged, random) => {
      for (let flips = 1 + Math.floor(random() * 4); flips > 0; flips -= 1) {
        const at = moovAt + Math.floor(random() * (moovEnd - moovAt));
        damaged[at] = random() < 0.5 ? 0xff : Math.floor(random() * 256);
      }
    });
    // Both ways were taken: the damage reached fields the reader reads and ones it checks.
    expect(outcomes.read).toBeGreaterThan(0);
    expect(outcomes.left).toBeGreaterThan(0);
  });

  it("every job type but extract.metadata (whose output is ffprobe's description) takes a header probe", () => {
    expect(inputProbeFor("extract.metadata")).toBe("ffprobe");
    for (const type of ["transcode", "thumbnail", "audio.extract", "watermark.add", "caption.burn", "qr.generate"] as const) {
      expect(inputProbeFor(type)).toBe("header-first");
    }
  });
});

describe("an input probed from its PNG header", () => {
  it.each([...PNGS, "input-image", "no-iend.png"])("%s: the same format, size, stream and frame rate as ffprobe reports", async (name) => {
    const [header, ffprobe] = await Promise.all([probePictureHeader(file(name)), probeMedia(file(name))]);
    expect(header, "read from the header, not left to ffprobe").not.toBeNull();
    expect(header!.readBy).toBe("header");
    expect({ ...usedFacts(header!), codec: header!.streams[0]!.codec }).toEqual({ ...usedFacts(ffprobe), codec: ffprobe.streams[0]!.codec });
    expect(await probeInputHeader(file(name))).toEqual(header);
  });

  it.each(["animated.apng", "named.jpg", "cut-in-idat.png", "cut-after-ihdr.png", "bad-crc.png", "h264-aac.mp4"])("%s is left to ffprobe", async (name) => {
    expect(await probePictureHeader(file(name))).toBeNull();
  });

  it("a file with more chunks before its image data than the walk takes is left to ffprobe", async () => {
    const png = await readFile(file("rgb.png"));
    const text = (n: number) => {
      const data = Buffer.from(`Comment\0${n}`, "latin1");
      const typed = Buffer.concat([Buffer.from("tEXt", "latin1"), data]);
      const chunk = Buffer.alloc(12 + data.length);
      chunk.writeUInt32BE(data.length, 0);
      typed.copy(chunk, 4);
      chunk.writeUInt32BE(crc32(typed), 8 + data.length);
      return chunk;
    };
    const withText = (count: number) => Buffer.concat([png.subarray(0, 33), ...Array.from({ length: count }, (_, n) => text(n)), png.subarray(33)]);
    await writeFile(file("some-text.png"), withText(MAX_CHUNKS_BEFORE_IDAT - 2));
    await writeFile(file("much-text.png"), withText(MAX_CHUNKS_BEFORE_IDAT));
    expect(usedFacts((await probePictureHeader(file("some-text.png")))!)).toEqual(usedFacts(await probeMedia(file("some-text.png"))));
    expect(await probePictureHeader(file("much-text.png"))).toBeNull();
  });

  it("a picture over the pixel cap fails with the same error as ffprobe's path", async () => {
    const caps = { ...DEFAULT_MEDIA_CAPS, maxPixels: 320 * 120 };
    const [header, ffprobe] = await Promise.allSettled([probePictureHeader(file("rgb.png"), caps), probeMedia(file("rgb.png"), { caps })]);
    expect(header.status).toBe("rejected");
    expect((header as PromiseRejectedResult).reason).toBeInstanceOf(MediaCapError);
    expect((header as PromiseRejectedResult).reason).toEqual((ffprobe as PromiseRejectedResult).reason);
  });

  it("a damaged header never throws anything but a cap error: it is read or left to ffprobe", async () => {
    const whole = await readFile(file("rgba.png"));
    const outcomes = await probeDamagedCopies(whole, "damaged.png", probePictureHeader, 0x1d872b41, (damaged, random) => {
      // The signature, IHDR and the next chunks' headers; a CRC-matching IHDR is read whatever its size says.
      const at = Math.floor(random() * 70);
      damaged[at] = Math.floor(random() * 256);
      if (random() < 0.5 && at >= 16 && at < 29) damaged.writeUInt32BE(crc32(damaged.subarray(12, 29)), 29);
    });
    expect(outcomes.read).toBeGreaterThan(0);
    expect(outcomes.left).toBeGreaterThan(0);
  });
});

describe("an input probed from its JPEG header", () => {
  it.each([...JPEGS, "input-photo", "exif.jpg", "tiny-photo", "some-comments.jpg"])("%s: the same format, duration, size, stream and frame rate as ffprobe reports", async (name) => {
    const [header, ffprobe] = await Promise.all([probePictureHeader(file(name)), probeMedia(file(name))]);
    expect(header, "read from the header, not left to ffprobe").not.toBeNull();
    expect(header!.readBy).toBe("header");
    expect({ ...usedFacts(header!), codec: header!.streams[0]!.codec }).toEqual({ ...usedFacts(ffprobe), codec: ffprobe.streams[0]!.codec });
  });

  it("a picture's small size is what makes ffprobe read a .jpg as jpeg_pipe, and such a one is left to ffprobe", async () => {
    const tiny = await probeMedia(file("tiny.jpg"));
    expect(tiny.format).toMatchObject({ name: "jpeg_pipe", durationMs: null });
    expect(tiny.format.size).toBeLessThanOrEqual(2048);
    expect(await probePictureHeader(file("tiny.jpg"))).toBeNull();
  });

  it.each(["photo.png", "photo.jpe", "cut.jpg", "progressive-marker.jpg", "twelve-bit.jpg", "zero-sampling.jpg", "fill-byte.jpg", "many-comments.jpg"])("%s is left to ffprobe", async (name) => {
    expect(await probePictureHeader(file(name))).toBeNull();
  });

  it("a picture over the pixel cap fails with the same error as ffprobe's path", async () => {
    const caps = { ...DEFAULT_MEDIA_CAPS, maxPixels: 320 * 120 };
    const [header, ffprobe] = await Promise.allSettled([probePictureHeader(file("yuv420.jpg"), caps), probeMedia(file("yuv420.jpg"), { caps })]);
    expect((header as PromiseRejectedResult).reason).toBeInstanceOf(MediaCapError);
    expect((header as PromiseRejectedResult).reason).toEqual((ffprobe as PromiseRejectedResult).reason);
  });

  it("a damaged header never throws anything but a cap error: it is read or left to ffprobe", async () => {
    const whole = await readFile(file("exif.jpg"));
    const frameEnd = whole.indexOf(Buffer.from([0xff, 0xda]));
    const outcomes = await probeDamagedCopies(whole, "damaged.jpg", probePictureHeader, 0x6b8b4567, (damaged, random) => {
      // The segments before the scan: SOI, the APP1 block's header, the tables, the frame header.
      const at = random() < 0.3 ? Math.floor(random() * 8) : 30_004 + Math.floor(random() * (frameEnd - 30_004));
      damaged[at] = random() < 0.3 ? 0xff : Math.floor(random() * 256);
    });
    expect(outcomes.read).toBeGreaterThan(0);
    expect(outcomes.left).toBeGreaterThan(0);
  });
});
