import { execFile } from "node:child_process";
import { createReadStream } from "node:fs";
import { stat, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { promisify } from "node:util";

const exec = promisify(execFile);

/** Files made by ffmpeg for tests: a 3 s 640x360 video with a sine tone, a PNG logo, subtitles, and junk. */
export interface TestMedia {
  video: string;
  longVideo: string;
  audioOnly: string;
  logo: string;
  srt: string;
  vtt: string;
  corrupt: string;
  truncated: string;
}

/** Generates the test media into `dir` (a few hundred KB, about a second of ffmpeg time). */
export async function createTestMedia(dir: string): Promise<TestMedia> {
  const file = (name: string) => path.join(dir, name);
  const ffmpeg = (args: string[]) => exec("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", ...args]);
  await Promise.all([
    ffmpeg([
      "-f", "lavfi", "-i", "testsrc=duration=3:size=640x360:rate=25",
      "-f", "lavfi", "-i", "sine=frequency=440:duration=3",
      "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", file("video.mp4"),
    ]),
    // Cheap to make, slow to transcode with h265 "veryslow": still running when a test cancels it.
    ffmpeg([
      "-f", "lavfi", "-i", "testsrc2=duration=20:size=480x270:rate=25",
      "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", file("long.mp4"),
    ]),
    ffmpeg(["-f", "lavfi", "-i", "sine=frequency=220:duration=2", "-c:a", "libmp3lame", file("tone.mp3")]),
    ffmpeg(["-f", "lavfi", "-i", "color=c=red@0.5:size=120x60,format=rgba", "-frames:v", "1", file("logo.png")]),
  ]);
  await writeFile(file("subs.srt"), "1\n00:00:00,000 --> 00:00:01,500\nHello Renderbus\n\n2\n00:00:01,500 --> 00:00:03,000\nSecond line\n");
  await writeFile(file("subs.vtt"), "WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nHello Renderbus\n\n00:00:01.500 --> 00:00:03.000\nSecond line\n");
  await writeFile(file("corrupt.mp4"), Buffer.from("this is not a video at all, just some text pretending to be one\n".repeat(200)));
  const { size } = await stat(file("video.mp4"));
  const whole = await import("node:fs/promises").then((fs) => fs.readFile(file("video.mp4")));
  await writeFile(file("truncated.mp4"), whole.subarray(0, Math.floor(size / 3)));
  return {
    video: file("video.mp4"),
    longVideo: file("long.mp4"),
    audioOnly: file("tone.mp3"),
    logo: file("logo.png"),
    srt: file("subs.srt"),
    vtt: file("subs.vtt"),
    corrupt: file("corrupt.mp4"),
    truncated: file("truncated.mp4"),
  };
}

/** A local HTTP server for test files: `/files/<name>` serves `dir/<name>`, `/redirect/<n>/<name>` redirects n times. */
export async function serveFiles(dir: string): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? "/", "http://localhost");
    const redirect = /^\/redirect\/(\d+)\/(.+)$/.exec(url.pathname);
    if (redirect) {
      const remaining = Number(redirect[1]);
      response.writeHead(302, { location: remaining > 1 ? `/redirect/${remaining - 1}/${redirect[2]}` : `/files/${redirect[2]}` });
      return response.end();
    }
    const name = url.pathname.startsWith("/files/") ? path.basename(url.pathname) : undefined;
    if (!name) {
      response.writeHead(404);
      return response.end();
    }
    const stream = createReadStream(path.join(dir, name));
    stream.once("error", () => {
      response.writeHead(404);
      response.end();
    });
    stream.once("open", () => {
      response.writeHead(200, { "content-type": "application/octet-stream" });
      stream.pipe(response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
