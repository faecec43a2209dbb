import { execFile } from "node:child_process";
import { createReadStream } from "node:fs";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { createServer, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * Serves job inputs over loopback: `clip.mp4` (a 1 s test video made by ffmpeg), `hang`, which never answers, and
 * files a benchmark publishes.
 */
export interface InputServer {
  clipUrl: string;
  /** A URL whose request is held open: a job fetching it stays running without using CPU. */
  hangUrl: string;
  /** Serves the file at `filePath` (streamed from disk) as `/<name>`; returns its URL. */
  publish(name: string, filePath: string): string;
  close(): Promise<void>;
}

export async function startInputServer(): Promise<InputServer> {
  const dir = await mkdtemp(join(tmpdir(), "rb-bench-media-"));
  const clipPath = join(dir, "clip.mp4");
  await run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc=duration=1:size=160x120:rate=10", "-c:v", "libx264", "-pix_fmt", "yuv420p", clipPath]);
  const clip = await readFile(clipPath);
  const held = new Set<ServerResponse>();
  const published = new Map<string, string>();
  const server = createServer((request, response) => {
    if (request.url === "/clip.mp4") {
      response.writeHead(200, { "content-type": "video/mp4", "content-length": clip.length }).end(clip);
    } else if (published.has(request.url ?? "")) {
      const filePath = published.get(request.url!)!;
      stat(filePath).then(
        (file) => {
          response.writeHead(200, { "content-type": "application/octet-stream", "content-length": file.size });
          createReadStream(filePath).pipe(response);
        },
        () => response.writeHead(404).end(),
      );
    } else if (request.url === "/hang") {
      held.add(response);
      response.on("close", () => held.delete(response));
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    clipUrl: `${origin}/clip.mp4`,
    hangUrl: `${origin}/hang`,
    publish: (name, filePath) => {
      published.set(`/${name}`, filePath);
      return `${origin}/${name}`;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
