import { randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, open, rm, stat } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { BenchContext } from "../context.js";
import type { BenchmarkResult } from "../result.js";
import { preciseNow, round1, round2 } from "../stats.js";

const MiB = 1024 * 1024;

/**
 * Upload throughput (issue 24, "Performance"): the same file sent (1) through tus to the gateway (`POST /uploads`, then
 * one PATCH with the whole file, as tus-js-client sends it by default; stored by the system's upload store) and (2) as
 * a bare HTTP PUT to a plain node http server in this process that streams the body to a file in the same temporary
 * directory's disk. Rounds alternate the two ways; the figure is MB/s of the median round, and tus' share of the bare
 * PUT's rate.
 */
export async function benchUploadThroughput(ctx: BenchContext): Promise<BenchmarkResult> {
  const bytes = ctx.sizes.quick ? 16 * MiB : 1024 * MiB;
  const rounds = ctx.sizes.rounds;
  const dir = await mkdtemp(join(tmpdir(), "rb-bench-upload-"));
  const bare = await startBarePutServer(dir);
  try {
    const source = join(dir, "source.bin");
    await writeSource(source, bytes);
    const samples: Record<"tus" | "put", number[]> = { tus: [], put: [] };
    for (let round = 0; round < rounds; round += 1) {
      for (const way of round % 2 === 0 ? (["tus", "put"] as const) : (["put", "tus"] as const)) {
        const ms = way === "tus" ? await throughTus(ctx, source, bytes) : await barePut(bare.url, source, bytes);
        samples[way].push(ms);
        ctx.log(`  upload ${way} round ${round + 1}/${rounds}: ${(ms / 1000).toFixed(2)} s (${round1(bytes / MiB / (ms / 1000))} MB/s)`);
      }
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const rate = (ms: number) => round1(bytes / MiB / (ms / 1000));
    const tusRate = rate(median(samples.tus));
    const putRate = rate(median(samples.put));
    const ratio = round2(tusRate / putRate);
    return {
      id: "upload-throughput",
      title: "14. Upload throughput: tus through the gateway vs a bare PUT to the same disk",
      baseline: "a bare HTTP PUT of the same bytes to a plain node http server writing to the same disk, in the same run",
      columns: ["way", "bytes", "median s", "MB/s"],
      rows: [
        ["tus (POST /uploads + one PATCH)", bytes, round2(median(samples.tus) / 1000), tusRate],
        ["bare PUT", bytes, round2(median(samples.put) / 1000), putRate],
        ["tus / bare", "", "", `${Math.round(ratio * 100)}%`],
      ],
      targets: [],
      notes: [
        `${rounds} rounds, alternating which way goes first; MB/s = MiB per second of the median round.`,
        "tus goes through the gateway's authentication, rate limit and @tus/server into the system's upload store (STORAGE of the run); the bare PUT is only node's http server and a file write stream.",
      ],
      data: { bytes, rounds, tusMs: samples.tus, putMs: samples.put, tusMBps: tusRate, putMBps: putRate, ratio },
    };
  } finally {
    await new Promise((resolve) => bare.server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  }
}

/** A file of `bytes` bytes (a random MiB repeated: neither all zeros nor costly to make). */
async function writeSource(file: string, bytes: number): Promise<void> {
  const block = randomBytes(MiB);
  const handle = await open(file, "w");
  try {
    for (let written = 0; written < bytes; written += MiB) await handle.write(block, 0, Math.min(MiB, bytes - written));
  } finally {
    await handle.close();
  }
}

function fileBody(file: string): ReadableStream {
  return Readable.toWeb(createReadStream(file, { highWaterMark: MiB })) as ReadableStream;
}

async function throughTus(ctx: BenchContext, source: string, bytes: number): Promise<number> {
  const headers = { authorization: `Bearer ${ctx.orgs.main.key}`, "tus-resumable": "1.0.0" };
  const started = preciseNow();
  const created = await fetch(`${ctx.gatewayUrl}/uploads`, { method: "POST", headers: { ...headers, "upload-length": String(bytes) } });
  if (created.status !== 201) throw new Error(`POST /uploads answered ${created.status}: ${await created.text()}`);
  const location = new URL(created.headers.get("location")!, ctx.gatewayUrl);
  // The gateway's PUBLIC_URL is the system's own address; the path is what matters.
  const patched = await fetch(`${ctx.gatewayUrl}${location.pathname}`, {
    method: "PATCH",
    headers: { ...headers, "upload-offset": "0", "content-type": "application/offset+octet-stream" },
    body: fileBody(source),
    duplex: "half",
  } as RequestInit);
  if (patched.status !== 204) throw new Error(`PATCH answered ${patched.status}: ${await patched.text()}`);
  if (patched.headers.get("upload-offset") !== String(bytes)) throw new Error(`PATCH stopped at ${patched.headers.get("upload-offset")} of ${bytes}`);
  const ms = preciseNow() - started;
  await fetch(`${ctx.gatewayUrl}${location.pathname}`, { method: "DELETE", headers }).catch(() => undefined);
  return ms;
}

async function barePut(url: string, source: string, bytes: number): Promise<number> {
  const started = preciseNow();
  const response = await fetch(url, { method: "PUT", body: fileBody(source), duplex: "half" } as RequestInit);
  const written = Number(await response.text());
  if (response.status !== 200 || written !== bytes) throw new Error(`bare PUT answered ${response.status} after ${written} of ${bytes} bytes`);
  return preciseNow() - started;
}

/** A plain node http server: each PUT's body streamed to a file of `dir` (then removed), answering the bytes written. */
async function startBarePutServer(dir: string): Promise<{ server: Server; url: string }> {
  let count = 0;
  const server = createServer((request, response) => {
    const file = join(dir, `put-${++count}.bin`);
    pipeline(request, createWriteStream(file))
      .then(async () => {
        const { size } = await stat(file);
        await rm(file, { force: true });
        response.end(String(size));
      })
      .catch((error: unknown) => {
        response.statusCode = 500;
        response.end(String(error));
      });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return { server, url: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/put` };
}
