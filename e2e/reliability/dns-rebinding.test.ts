import dns from "node:dns";
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createWebhookAgent, postWebhook } from "../../services/webhook-dispatcher/src/sending/post-webhook.js";
import { fetchInput } from "../../services/worker/src/fetch-input/fetch-input.js";
import { createInputAgent } from "../../services/worker/src/fetch-input/guarded-agent.js";

/**
 * DNS rebinding: a name answers a public address when checked and a private one when connected. Both SSRF guards
 * (webhook dispatcher, worker input fetch) resolve inside the connect step itself, so the address they check is the
 * address the socket uses. This test makes the resolver alternate public and loopback answers and shows that every
 * connection resolves exactly once through the guard, loopback answers are refused, and loopback is never reached.
 */
const REBINDING_HOST = "rebind.renderbus.test";
// A public address that nothing answers on here: connecting to it fails, but the guard must let it through.
const PUBLIC_ADDRESS = "1.1.1.1";

describe("SSRF guards against DNS rebinding", () => {
  const { resolve4, resolve6 } = dns.promises.Resolver.prototype;
  let answers = 0;
  let server: Server;
  let connections = 0;
  let port = 0;

  beforeAll(async () => {
    server = createServer((_request, response) => response.writeHead(200).end("reached loopback"));
    server.on("connection", () => (connections += 1));
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    port = (server.address() as { port: number }).port;
    // The guards resolve through c-ares (libs/address-guard): the rebinding name is answered there, A records only.
    dns.promises.Resolver.prototype.resolve4 = async function (this: dns.promises.Resolver, hostname: string) {
      if (hostname !== REBINDING_HOST) return Reflect.apply(resolve4, this, [hostname]) as Promise<string[]>;
      // Odd answers are public, even answers are loopback: a rebinding DNS server's pattern.
      answers += 1;
      return [answers % 2 === 1 ? PUBLIC_ADDRESS : "127.0.0.1"];
    } as typeof resolve4;
    dns.promises.Resolver.prototype.resolve6 = async function (this: dns.promises.Resolver, hostname: string) {
      if (hostname !== REBINDING_HOST) return Reflect.apply(resolve6, this, [hostname]) as Promise<string[]>;
      throw Object.assign(new Error(`queryAaaa ENODATA ${hostname}`), { code: "ENODATA" });
    } as typeof resolve6;
  });

  afterAll(async () => {
    Object.assign(dns.promises.Resolver.prototype, { resolve4, resolve6 });
    await new Promise<void>((done) => server.close(() => done()));
  });

  it("webhook dispatcher: resolves once per connection inside the guard and never reaches the loopback answer", async () => {
    const agent = createWebhookAgent({ guardAddresses: true, connectTimeoutMs: 300 });
    answers = 0;
    const results = [];
    for (let attempt = 1; attempt <= 6; attempt += 1) {
      results.push(await postWebhook(agent, { url: `http://${REBINDING_HOST}:${port}/hook`, body: "{}", event: "webhook.test", deliveryId: "del_x", attempt, secret: undefined, brand: "Renderbus" }, { timeoutMs: 1500 }));
    }
    await agent.close();
    expect(results.every((result) => !result.succeeded)).toBe(true);
    expect(results.filter((result) => /refused to connect to a private/.test(result.error ?? ""))).toHaveLength(3);
    expect(answers).toBe(6);
    expect(connections).toBe(0);
  });

  it("worker input fetch: resolves once per connection inside the guard and never reaches the loopback answer", async () => {
    const agent = createInputAgent({ allowPrivateAddresses: false, connectTimeoutMs: 300 });
    answers = 0;
    const errors: string[] = [];
    for (let attempt = 1; attempt <= 6; attempt += 1) {
      try {
        const destination = join(tmpdir(), `rb-rebinding-${process.pid}-${attempt}`);
        const { size } = await fetchInput({ name: "source", url: `http://${REBINDING_HOST}:${port}/clip.mp4`, destination, maxBytes: 1024, timeoutMs: 1500, agent, signal: new AbortController().signal });
        errors.push(`reached ${size}`);
      } catch (error) {
        errors.push((error as Error).message);
      }
    }
    await agent.close();
    expect(errors.filter((message) => message === "inputs.source: the URL points to an address that is not allowed")).toHaveLength(3);
    expect(errors.some((name) => name.startsWith("reached"))).toBe(false);
    expect(answers).toBe(6);
    expect(connections).toBe(0);
  });
});
