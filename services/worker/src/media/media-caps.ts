import { JobFailure } from "../job-failure.js";

/**
 * Bounds on the work one job may ask of a worker (SECURITY-AUDIT finding 12), whatever its plan: the decoded picture
 * size and frame rate of its inputs, and the size of the file it writes. A job over any of them fails with
 * INPUT_ERROR naming the limit. Memory, CPU time and process count are bounded per process by the sandbox.
 */
export interface MediaCaps {
  /** Width x height of any decoded picture; also passed to every decoder as `-max_pixels`. */
  maxPixels: number;
  /** Average frame rate of any video stream. */
  maxFps: number;
  /** Largest output file (`-fs`, then checked); the sandbox's RLIMIT_FSIZE sits a little above it. */
  outputMaxBytes: number;
}

/** 7680 x 7680: the largest picture a job may ask for (the params' dimension limit), so every output fits too. */
export const DEFAULT_MEDIA_CAPS: Readonly<MediaCaps> = {
  maxPixels: 7680 * 7680,
  maxFps: 120,
  outputMaxBytes: 2 * 1024 ** 3,
};

let current: MediaCaps = { ...DEFAULT_MEDIA_CAPS };

/** The caps every probe and ffmpeg run applies. */
export function mediaCaps(): Readonly<MediaCaps> {
  return current;
}

/** Replaces the process-wide caps (the worker calls it once at start from its configuration). */
export function configureMediaCaps(caps: MediaCaps): void {
  current = { ...caps };
}

/** A job's input or output is over one of the {@link MediaCaps}; an INPUT_ERROR that names the limit. */
export class MediaCapError extends JobFailure {
  constructor(message: string) {
    super("INPUT_ERROR", message);
  }
}

const megapixels = (pixels: number) => `${(pixels / 1e6).toFixed(1)} megapixels`;

/** The error for a picture over the pixel cap. */
export function pixelCapError(width: number, height: number, caps: MediaCaps = current): MediaCapError {
  return new MediaCapError(
    `a ${width}x${height} picture (${megapixels(width * height)}) is over the limit of ${megapixels(caps.maxPixels)} per frame (MEDIA_MAX_PIXELS)`,
  );
}

/** The error for an output that reached the size cap. */
export function outputSizeCapError(caps: MediaCaps = current): MediaCapError {
  return new MediaCapError(`the output reached the limit of ${caps.outputMaxBytes} bytes (OUTPUT_MAX_BYTES)`);
}

/**
 * Checks the video streams of a probe against the caps (pure).
 * @throws MediaCapError naming the first cap a stream is over.
 */
export function checkMediaCaps(streams: ReadonlyArray<{ type: string; width: number | null; height: number | null; fps: number | null }>, caps: MediaCaps = current): void {
  for (const stream of streams) {
    if (stream.type !== "video") continue;
    if (stream.width !== null && stream.height !== null && stream.width * stream.height > caps.maxPixels) {
      throw pixelCapError(stream.width, stream.height, caps);
    }
    if (stream.fps !== null && stream.fps > caps.maxFps) {
      throw new MediaCapError(`a frame rate of ${stream.fps} fps is over the limit of ${caps.maxFps} fps (MEDIA_MAX_FPS)`);
    }
  }
}

/**
 * Finds a decoder's refusal of a picture over the cap in ffmpeg's error output: "Picture size WxH exceeds specified
 * max pixel count", or "Picture size WxH is invalid" for sizes past ffmpeg's own limit (when over the cap too).
 */
export function pixelCapExceeded(stderr: string, caps: MediaCaps = current): { width: number; height: number } | undefined {
  for (const match of stderr.matchAll(/Picture size (\d+)x(\d+) (exceeds specified max pixel count|is invalid)/g)) {
    const [width, height] = [Number(match[1]), Number(match[2])];
    if (match[3] !== "is invalid" || width * height > caps.maxPixels) return { width, height };
  }
  return undefined;
}
