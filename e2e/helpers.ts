import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { runAdmin } from "../services/auth/src/testing/run-admin.js";

export const repoRoot = resolve(import.meta.dirname, "..");
const run = promisify(execFile);

/** Runs the operator CLI (`npm run admin -- ...`) against a running system's database, in this process. */
export async function admin(env: Record<string, string>, ...args: string[]): Promise<string> {
  return runAdmin(env, args);
}

/** Creates an org with the operator CLI and returns its id and API key. */
export async function createOrg(env: Record<string, string>, plan: string, name = `Org ${plan}`): Promise<{ orgId: string; key: string }> {
  const output = await admin(env, "org:create", "--name", name, "--plan", plan);
  const orgId = /org_[0-9A-Z]+/.exec(output)?.[0];
  const key = /rb_[A-Za-z0-9_-]{40,}/.exec(output)?.[0];
  if (!orgId || !key) throw new Error(`unexpected admin output: ${output}`);
  return { orgId, key };
}

export interface ReceivedWebhook {
  rawBody: Buffer;
  headers: IncomingHttpHeaders;
  receivedAt: number;
}

/** A local webhook receiver recording raw bytes and headers; `respond` decides the status per request. */
export async function startReceiver(respond: (index: number) => number = () => 200) {
  const received: ReceivedWebhook[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({ rawBody: Buffer.concat(chunks), headers: request.headers, receivedAt: Date.now() });
      response.writeHead(respond(received.length - 1)).end("ok");
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}/hook`, received, close: () => new Promise<void>((done) => server.close(() => done())) };
}

/** Serves files from a directory over HTTP (job inputs come from URLs). */
export async function startFileServer(dir: string) {
  const server = createServer((request, response) => {
    try {
      const body = readFileSync(join(dir, decodeURIComponent(new URL(request.url ?? "/", "http://x").pathname)));
      response.writeHead(200, { "content-type": "application/octet-stream", "content-length": body.length }).end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const port = (server.address() as { port: number }).port;
  return { url: (name: string) => `http://127.0.0.1:${port}/${name}`, close: () => new Promise<void>((done) => server.close(() => done())) };
}

/** A short test video made by ffmpeg: 2 s of 320x240 test pattern with a sine tone. */
export async function makeTestVideo(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "rb-media-"));
  await run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc=duration=2:size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:duration=2", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", join(dir, "clip.mp4")]);
  return dir;
}

export async function waitFor<T>(probe: () => Promise<T | undefined> | T | undefined, { timeoutMs = 30_000, intervalMs = 100, what = "condition" } = {}): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, intervalMs));
  }
}

export function api(baseUrl: string, key: string) {
  return async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
  };
}

/**
 * The dashboard CSRF token of a session: the `rb_csrf` cookie the gateway sets on a signed-in API response, which
 * cookie-authenticated writes must send back as `X-CSRF-Token`.
 */
export async function csrfTokenOf(baseUrl: string, cookie: string): Promise<string> {
  const response = await fetch(`${baseUrl}/me`, { headers: { cookie } });
  const token = response.headers.getSetCookie().find((value) => value.startsWith("rb_csrf="))?.split(";")[0]?.slice("rb_csrf=".length);
  if (!token) throw new Error(`no rb_csrf cookie from GET /me (status ${response.status})`);
  return token;
}

/** A person signed up through the gateway: their cookie, and cookie requests as the dashboard makes them. */
export async function signUp(gatewayUrl: string, name: string) {
  const email = `${name.toLowerCase()}-${randomBytes(4).toString("hex")}@example.com`;
  const response = await fetch(`${gatewayUrl}/auth/sign-up/email`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: gatewayUrl },
    body: JSON.stringify({ email, password: "correct horse battery", name }),
  });
  if (response.status !== 200) throw new Error(`sign-up answered ${response.status}: ${await response.text()}`);
  const cookie = response.headers.getSetCookie().find((value) => value.startsWith("rb_session="))!.split(";")[0]!;
  const token = await csrfTokenOf(gatewayUrl, cookie);
  return {
    email,
    cookie,
    token,
    /** A dashboard write: same origin, cookie and CSRF token. */
    post: (path: string, body: unknown, base = gatewayUrl) =>
      fetch(`${base}${path}`, { method: "POST", headers: { cookie, origin: gatewayUrl, "content-type": "application/json", "x-csrf-token": token }, body: JSON.stringify(body) }),
    me: (base = gatewayUrl) => fetch(`${base}/me`, { headers: { cookie } }),
  };
}
