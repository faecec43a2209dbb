import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { Socket } from "node:net";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "@renderbus/config";
import { createLogger } from "@renderbus/telemetry";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import { startAuthService, type AuthService } from "@renderbus/auth";
import { authConfigSchema } from "@renderbus/auth/config";
import { gatewayConfigSchema } from "../config.js";
import { startGatewayService, type GatewayService } from "../service.js";

/** What the auth service and the gateways are configured to be reached at (the Origin Better Auth trusts). */
const PUBLIC_URL = "http://127.0.0.1:3000";
const logger = createLogger({ service: "test", level: "silent" });

/** An HTTP server that must never be reached: it counts connections and records what did arrive. */
interface Trap {
  port: number;
  connections: number;
  requests: { method: string; url: string; headers: IncomingHttpHeaders }[];
  close(): Promise<void>;
}

async function startTrap(): Promise<Trap> {
  const trap = { connections: 0, requests: [] as Trap["requests"] } as Trap;
  const server: Server = createServer((request, response) => {
    trap.requests.push({ method: request.method ?? "", url: request.url ?? "", headers: request.headers });
    // `/auth/stall` never answers: the proxy's timeout has to end it.
    if (request.url?.startsWith("/auth/stall")) return;
    // As Better Auth's own limiter answers, and as it fails.
    if (request.url?.startsWith("/auth/limited")) return void response.writeHead(429, { "content-type": "application/json", "x-retry-after": "42" }).end('{"message":"Too many requests. Please try again later."}');
    if (request.url?.startsWith("/auth/broken")) return void response.writeHead(500, { "content-type": "application/json" }).end('{"message":"relation \\"session\\" does not exist","stack":"at query"}');
    response.writeHead(200, { "content-type": "application/json" }).end('{"trap":"reached"}');
  });
  server.on("connection", () => (trap.connections += 1));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  trap.port = (server.address() as { port: number }).port;
  trap.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return trap;
}

/** Writes one request exactly as given (no client library normalises the target) and reads the status and body. */
function rawRequest(port: number, requestLine: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = new Socket();
    let received = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => (received += chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0);
      resolve({ status, body: received.slice(received.indexOf("\r\n\r\n") + 4) });
    });
    socket.connect(port, "127.0.0.1", () => {
      const lines = [requestLine, "Host: 127.0.0.1", "Connection: close", ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)];
      socket.write(`${lines.join("\r\n")}\r\n\r\n`);
    });
  });
}

describe("the gateway's /auth proxy (SECURITY-AUDIT findings 1 and 3)", () => {
  const infra = () => testInfra();
  let auth: AuthService;
  let trap: Trap;
  const gateways: GatewayService[] = [];
  const outputDir = () => mkdtemp(join(tmpdir(), "rb-auth-proxy-"));

  async function startGateway(env: Record<string, string>): Promise<GatewayService> {
    const config = parseConfig(gatewayConfigSchema, {
      MODE: "test",
      LOG_LEVEL: "error",
      GATEWAY_PORT: "0",
      GATEWAY_METRICS_PORT: "0",
      PUBLIC_URL,
      NATS_URL: infra().natsUrl,
      REDIS_URL: infra().redisUrl,
      AUTH_GRPC_ADDRESS: `127.0.0.1:${auth.grpcPort}`,
      AUTH_HTTP_URL: `http://127.0.0.1:${auth.httpPort}`,
      OUTPUT_DIR: await outputDir(),
      // Counts of one test system stay apart from every other's in the shared Redis.
      NATS_NAMESPACE: testNamespace("authproxy"),
      ...env,
    });
    const gateway = await startGatewayService(config, { logger });
    gateways.push(gateway);
    return gateway;
  }

  beforeAll(async () => {
    trap = await startTrap();
    const config = parseConfig(authConfigSchema, {
      MODE: "test",
      EMAIL_VERIFICATION: "off",
      DATABASE_URL: await createTestDatabase("authproxy"),
      NATS_URL: infra().natsUrl,
      NATS_NAMESPACE: testNamespace("authproxy"),
      AUTH_GRPC_PORT: "0",
      AUTH_HTTP_PORT: "0",
      PUBLIC_URL,
      LOG_LEVEL: "error",
    });
    auth = await startAuthService(config, { logger });
  });
  afterAll(async () => {
    for (const gateway of gateways) await gateway.stop();
    await auth?.stop();
    await trap?.close();
  });

  const json = (body: unknown) => ({ method: "POST", headers: { "content-type": "application/json", origin: PUBLIC_URL }, body: JSON.stringify(body) });
  const newEmail = () => `u${randomBytes(5).toString("hex")}@example.com`;
  const password = "correct horse battery";

  describe("forwards only to the auth service, only its own paths", () => {
    let gateway: GatewayService;
    beforeAll(async () => {
      gateway = await startGateway({});
    });

    it("reaches no other host and no other path, whatever the request line says", async () => {
      const other = `http://127.0.0.1:${trap.port}`;
      const attempts = [
        `GET ${other}/auth/../x HTTP/1.1`,
        `GET ${other}/auth/x HTTP/1.1`,
        `GET ${other}/.well-known/../x HTTP/1.1`,
        `POST ${other}/auth/sign-in/email HTTP/1.1`,
        `GET //127.0.0.1:${trap.port}/auth/x HTTP/1.1`,
        `GET /auth/../x HTTP/1.1`,
        `GET /auth/%2e%2e/x HTTP/1.1`,
        `GET /auth/%2E%2E/%2e%2e/x HTTP/1.1`,
        `GET /.well-known/../x HTTP/1.1`,
        `GET /auth/..%2f..%2fx HTTP/1.1`,
        `GET /auth/..%5c..%5cx HTTP/1.1`,
        `OPTIONS * HTTP/1.1`,
      ];
      const answers: Record<string, number> = {};
      for (const line of attempts) answers[line] = (await rawRequest(gateway.port, line)).status;
      expect(trap.connections).toBe(0);
      for (const [line, status] of Object.entries(answers)) expect([400, 404], line).toContain(status);
      // Absolute-form targets are refused before routing (app.ts), whatever host they name.
      expect(answers[`GET ${other}/auth/x HTTP/1.1`]).toBe(400);
      expect(answers[`GET //127.0.0.1:${trap.port}/auth/x HTTP/1.1`]).toBe(400);
    });

    it("answers an escaping path itself with the documented 404 error body, without asking the auth service", async () => {
      const escaped = await rawRequest(gateway.port, "GET /auth/%2e%2e/healthz HTTP/1.1");
      expect(escaped.status).toBe(404);
      expect(JSON.parse(escaped.body)).toEqual({ error: { code: "NOT_FOUND", message: "No such auth route" } });
    });

    it("still forwards the auth service's own routes (control: the proxy works)", async () => {
      const session = await rawRequest(gateway.port, "GET /auth/get-session HTTP/1.1");
      expect(session.status).toBe(200);
      const metadata = await fetch(`${gateway.url}/.well-known/oauth-authorization-server/auth`);
      expect(metadata.status).toBe(200);
      expect(((await metadata.json()) as { issuer: string }).issuer).toBe(`${PUBLIC_URL}/auth`);
    });
  });

  describe("in front of an upstream that records what it receives", () => {
    let gateway: GatewayService;
    beforeAll(async () => {
      // The trap plays the auth service here: whatever the proxy forwards, the trap sees.
      gateway = await startGateway({ AUTH_HTTP_URL: `http://127.0.0.1:${trap.port}`, AUTH_PROXY_TIMEOUT_MS: "300" });
    });

    it("sends dot segments only in their normalised form, and nothing that leaves /auth/ or /.well-known/", async () => {
      trap.requests.length = 0;
      for (const line of ["GET /auth/%2e%2e/x HTTP/1.1", "GET /.well-known/../healthz HTTP/1.1", "GET /auth/..%2f..%2fx HTTP/1.1", "GET /auth/a/../../x HTTP/1.1"]) {
        expect((await rawRequest(gateway.port, line)).status, line).toBe(404);
      }
      expect(trap.requests).toEqual([]);
      expect((await rawRequest(gateway.port, "GET /auth/a/../get-session?x=1 HTTP/1.1")).status).toBe(200);
      expect(trap.requests.map((request) => request.url)).toEqual(["/auth/get-session?x=1"]);
    });

    it("states the client IP in X-Forwarded-For instead of passing on what the client claims", async () => {
      trap.requests.length = 0;
      await rawRequest(gateway.port, "GET /auth/get-session HTTP/1.1", { "X-Forwarded-For": "6.6.6.6", Forwarded: "for=6.6.6.6", "X-Real-IP": "6.6.6.6" });
      expect(trap.requests).toHaveLength(1);
      expect(trap.requests[0]!.headers["x-forwarded-for"]).toBe("127.0.0.1");
      expect(trap.requests[0]!.headers.forwarded).toBeUndefined();
      expect(trap.requests[0]!.headers["x-real-ip"]).toBeUndefined();
    });

    it("refuses a body nested deeper than 64 levels with 400 VALIDATION_ERROR before the auth service sees it, whatever its declared type", async () => {
      trap.requests.length = 0;
      const deep = `{"email":"a@example.com","password":${"[".repeat(65)}${"]".repeat(65)}}`;
      for (const contentType of ["application/json", "text/plain", "application/x-www-form-urlencoded"]) {
        const response = await fetch(`${gateway.url}/auth/sign-in/email`, { method: "POST", headers: { "content-type": contentType }, body: deep });
        expect(response.status, contentType).toBe(400);
        expect(await response.json()).toEqual({ error: { code: "VALIDATION_ERROR", message: "body: nested deeper than 64 levels" } });
      }
      expect(trap.requests).toEqual([]);
      // 64 levels are forwarded.
      const allowed = await fetch(`${gateway.url}/auth/sign-in/email`, { method: "POST", headers: { "content-type": "application/json" }, body: `{"a":${"[".repeat(63)}${"]".repeat(63)}}` });
      expect(allowed.status).toBe(200);
      expect(trap.requests).toHaveLength(1);
    });

    it("restates the auth service's 429 with Retry-After and its 500 without detail, in the API's envelope", async () => {
      const limited = await fetch(`${gateway.url}/auth/limited`);
      expect(limited.status).toBe(429);
      expect(limited.headers.get("retry-after")).toBe("42");
      expect(await limited.json()).toEqual({ error: { code: "RATE_LIMITED", message: "Too many requests. Please try again later." } });
      const broken = await fetch(`${gateway.url}/auth/broken`);
      expect(broken.status).toBe(500);
      expect(await broken.text()).toBe(JSON.stringify({ error: { code: "INTERNAL_ERROR", message: "Internal error" } }));
    });

    it("answers 503 SERVICE_UNAVAILABLE when the auth service does not answer within AUTH_PROXY_TIMEOUT_MS", async () => {
      const response = await fetch(`${gateway.url}/auth/stall`);
      expect(response.status).toBe(503);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe("SERVICE_UNAVAILABLE");
    });
  });

  describe("abuse limits, shared by every replica through Redis", () => {
    let first: GatewayService;
    let second: GatewayService;
    beforeAll(async () => {
      // Two replicas of one deployment (one namespace, one Redis); the per-IP budget is out of the way here.
      const shared = { NATS_NAMESPACE: testNamespace("authlimits"), AUTH_SIGN_IN_PER_IP_LIMIT: "1000", AUTH_SIGN_UP_PER_IP_LIMIT: "1000" };
      first = await startGateway(shared);
      second = await startGateway(shared);
    });

    async function signUp(gateway: GatewayService): Promise<string> {
      const email = newEmail();
      const response = await fetch(`${gateway.url}/auth/sign-up/email`, json({ email, password, name: "Guessed" }));
      expect(response.status).toBe(200);
      return email;
    }

    it("answers 429 RATE_LIMITED with Retry-After within 10 wrong passwords for one account, across two replicas", async () => {
      const email = await signUp(first);
      const statuses: number[] = [];
      let limited: Response | undefined;
      for (let attempt = 0; attempt < 10; attempt++) {
        const replica = attempt % 2 === 0 ? first : second;
        const response = await fetch(`${replica.url}/auth/sign-in/email`, json({ email, password: `wrong guess ${attempt}` }));
        statuses.push(response.status);
        if (response.status === 429 && !limited) limited = response;
      }
      // Five guesses per account (the default), counted across both replicas: each alone has seen only five.
      expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
      expect(statuses.slice(5)).toEqual([429, 429, 429, 429, 429]);
      expect(Number(limited!.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(((await limited!.json()) as { error: { code: string } }).error.code).toBe("RATE_LIMITED");
      // The lock is on the account, whatever spelling of the address or the path is used.
      expect((await fetch(`${first.url}/auth/sign-in/email`, json({ email: ` ${email.toUpperCase()} `, password }))).status).toBe(429);
      expect((await fetch(`${second.url}/auth/sign-in/email/`, json({ email, password }))).status).toBe(429);
    });

    it("locks an account only for the address that guessed wrong; once guesses from everywhere spend the account's budget, only addresses it signed in from before get through", async () => {
      const behindProxy = await startGateway({ NATS_NAMESPACE: testNamespace("authlockout"), TRUSTED_PROXIES: "127.0.0.1", AUTH_SIGN_IN_PER_ACCOUNT_ALL_IPS_LIMIT: "8" });
      const email = await signUp(behindProxy);
      const from = (ip: string, guess: string) =>
        fetch(`${behindProxy.url}/auth/sign-in/email`, { method: "POST", headers: { "content-type": "application/json", origin: PUBLIC_URL, "x-forwarded-for": ip }, body: JSON.stringify({ email, password: guess }) });
      const attacker: number[] = [];
      for (let attempt = 0; attempt < 6; attempt++) attacker.push((await from("198.51.100.66", `wrong guess ${attempt}`)).status);
      expect(attacker).toEqual([401, 401, 401, 401, 401, 429]);
      expect((await from("203.0.113.5", password)).status).toBe(200);
      // Guesses from more addresses: 5 counted above, 3 more spend the account's budget of 8 over every address.
      for (const ip of ["198.51.100.67", "198.51.100.68", "198.51.100.69"]) expect((await from(ip, "wrong guess")).status).toBe(401);
      expect((await from("198.51.100.70", "wrong guess")).status).toBe(429);
      expect((await from("203.0.113.6", password)).status).toBe(429);
      // The owner's own address, where they signed in before, is not locked out by the others' guesses.
      expect((await from("203.0.113.5", password)).status).toBe(200);
      // Nor does knowing the address help a guesser beyond its own per-address budget.
      expect((await from("203.0.113.5", "wrong guess")).status).toBe(401);
    });

    it("answers the auth service's refusals in the API's error envelope: a wrong password, a taken email", async () => {
      const email = await signUp(first);
      const wrong = await fetch(`${first.url}/auth/sign-in/email`, json({ email, password: "not the password" }));
      expect(wrong.status).toBe(401);
      expect(wrong.headers.get("content-type")).toMatch(/^application\/json/);
      expect(await wrong.json()).toEqual({ error: { code: "UNAUTHORIZED", message: "Invalid email or password" } });
      const taken = await fetch(`${first.url}/auth/sign-up/email`, json({ email, password, name: "Again" }));
      expect(taken.status).toBe(409);
      expect(((await taken.json()) as { error: { code: string; message: string } }).error).toEqual({ code: "CONFLICT", message: expect.stringMatching(/exists/i) });
    });

    it("does not count successful sign-ins against the account", async () => {
      const email = await signUp(first);
      for (let attempt = 0; attempt < 7; attempt++) {
        expect((await fetch(`${first.url}/auth/sign-in/email`, json({ email, password }))).status).toBe(200);
      }
    });

    it("limits guesses on the OAuth flow's own sign-in page too", async () => {
      const email = await signUp(first);
      const form = new URLSearchParams({ mode: "sign-in", email, password: "wrong guess", oauth_query: "" }).toString();
      const statuses: number[] = [];
      for (let attempt = 0; attempt < 10; attempt++) {
        const response = await fetch(`${first.url}/auth/oauth/sign-in`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", origin: PUBLIC_URL },
          body: form,
          redirect: "manual",
        });
        statuses.push(response.status);
      }
      expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
      expect(statuses.slice(5)).toEqual([429, 429, 429, 429, 429]);
    });
  });

  describe("per client IP", () => {
    const limits = { AUTH_SIGN_IN_PER_IP_LIMIT: "3", AUTH_SIGN_IN_PER_ACCOUNT_LIMIT: "1000", AUTH_SIGN_UP_PER_IP_LIMIT: "2", AUTH_CLIENT_REGISTRATION_PER_IP_LIMIT: "2", AUTH_PASSWORD_RESET_PER_IP_LIMIT: "2", AUTH_VERIFICATION_EMAIL_PER_IP_LIMIT: "2" };
    const signIn = (gateway: GatewayService, forwardedFor?: string) =>
      fetch(`${gateway.url}/auth/sign-in/email`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: PUBLIC_URL, ...(forwardedFor ? { "x-forwarded-for": forwardedFor } : {}) },
        body: JSON.stringify({ email: newEmail(), password: "wrong guess" }),
      });

    it("believes X-Forwarded-For only from a proxy in TRUSTED_PROXIES, and counts each client it names on its own", async () => {
      const behindProxy = await startGateway({ ...limits, NATS_NAMESPACE: testNamespace("authip"), TRUSTED_PROXIES: "127.0.0.1" });
      const statuses = [];
      for (let attempt = 0; attempt < 4; attempt++) statuses.push((await signIn(behindProxy, "198.51.100.1")).status);
      expect(statuses).toEqual([401, 401, 401, 429]);
      expect((await signIn(behindProxy, "198.51.100.2")).status).toBe(401);
    });

    it("does not believe a client's own X-Forwarded-For: spoofed addresses do not reset the count", async () => {
      const direct = await startGateway({ ...limits, NATS_NAMESPACE: testNamespace("authspoof") });
      const statuses = [];
      for (let attempt = 0; attempt < 4; attempt++) statuses.push((await signIn(direct, `203.0.113.${attempt}`)).status);
      expect(statuses).toEqual([401, 401, 401, 429]);
    });

    it("limits sign-ups, OAuth client registrations, password resets and confirmation emails per IP", async () => {
      const gateway = await startGateway({ ...limits, NATS_NAMESPACE: testNamespace("authother") });
      const signUps = [];
      for (let attempt = 0; attempt < 3; attempt++) signUps.push((await fetch(`${gateway.url}/auth/sign-up/email`, json({ email: newEmail(), password, name: "Farm" }))).status);
      expect(signUps).toEqual([200, 200, 429]);

      const register = () =>
        fetch(`${gateway.url}/auth/oauth2/register`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ client_name: "Claude Desktop", redirect_uris: ["https://attacker.example/cb"], token_endpoint_auth_method: "none", grant_types: ["authorization_code"], response_types: ["code"] }),
        });
      const registrations = [];
      for (let attempt = 0; attempt < 3; attempt++) registrations.push((await register()).status);
      expect(registrations).toEqual([201, 201, 429]);

      const resets = [];
      for (let attempt = 0; attempt < 3; attempt++) resets.push((await fetch(`${gateway.url}/auth/request-password-reset`, json({ email: newEmail() }))).status);
      expect(resets.slice(0, 2)).not.toContain(429);
      expect(resets[2]).toBe(429);

      const confirmations = [];
      for (let attempt = 0; attempt < 3; attempt++) confirmations.push((await fetch(`${gateway.url}/auth/send-verification-email`, json({ email: newEmail() }))).status);
      expect(confirmations.slice(0, 2)).not.toContain(429);
      expect(confirmations[2]).toBe(429);
    });
  });
});
