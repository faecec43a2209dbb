// A webhook receiver as you would write one: verifies each Renderbus delivery with the SDK and prints it; also serves
// a folder of media files at /files/, so a file on this machine can be a job's input (README.md, "Quickstart").
//   WEBHOOK_SECRET=whsec_... npm start -w @renderbus/example-webhook-receiver
// Needs the SDK's build once: npm run build -w @renderbus/sdk
import { createReadStream, statSync } from "node:fs";
import { createServer } from "node:http";
import { resolve, sep } from "node:path";
import { constructWebhookEvent } from "@renderbus/sdk";

const secret = process.env.WEBHOOK_SECRET;
if (!secret) {
  process.stderr.write("WEBHOOK_SECRET is required: the webhookSecret you gave PATCH /orgs/{orgId}\n");
  process.exit(1);
}
const port = Number(process.env.PORT ?? 4000);
// Relative to the folder the command was typed in: `npm start -w` runs this in examples/webhook-receiver, and says
// where it was started from in INIT_CWD.
const filesDir = resolve(process.env.INIT_CWD ?? process.cwd(), process.env.FILES_DIR ?? ".");
/** Largest webhook body read; Renderbus payloads are a few hundred bytes. */
const MAX_BODY_BYTES = 256 * 1024;

/** One line per verified event. */
function describe(event) {
  switch (event.event) {
    case "job.completed":
      return `verified job.completed ${event.jobId}: ${event.cost.credits} credits, ${event.result.url ?? "no link"}`;
    case "job.failed":
      return `verified job.failed ${event.jobId}: ${event.error.code} ${event.error.message}`;
    case "batch.completed":
      return `verified batch.completed ${event.batchId}`;
    default:
      return `verified ${event.event} ${event.jobId ?? ""}`.trim();
  }
}

const server = createServer((request, response) => {
  const url = new URL(request.url ?? "/", "http://receiver");
  if (request.method === "POST" && url.pathname === "/hook") {
    // The signature covers the raw bytes: read them as they came, parse only after verifying.
    const chunks = [];
    let size = 0;
    request.on("data", (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) request.destroy();
      else chunks.push(chunk);
    });
    request.on("end", () => {
      try {
        const event = constructWebhookEvent(Buffer.concat(chunks), request.headers, secret);
        process.stdout.write(`${describe(event)}\n`);
        response.writeHead(204).end();
      } catch (error) {
        process.stdout.write(`refused a delivery: ${error instanceof Error ? error.message : String(error)}\n`);
        response.writeHead(401).end();
      }
    });
    return;
  }
  if (request.method === "GET" && url.pathname.startsWith("/files/")) {
    const file = resolve(filesDir, decodeURIComponent(url.pathname.slice("/files/".length)));
    if (!file.startsWith(filesDir + sep)) return void response.writeHead(404).end();
    try {
      response.writeHead(200, { "content-type": "application/octet-stream", "content-length": statSync(file).size });
      createReadStream(file).pipe(response);
    } catch {
      response.writeHead(404).end();
    }
    return;
  }
  response.writeHead(404).end();
});

server.listen(port, "127.0.0.1", () => {
  process.stdout.write(`receiving webhooks at http://127.0.0.1:${port}/hook, serving ${filesDir} at http://127.0.0.1:${port}/files/ (Ctrl-C to stop)\n`);
});
// Ctrl-C: stop at once, keep-alive connections from the dispatcher included.
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
