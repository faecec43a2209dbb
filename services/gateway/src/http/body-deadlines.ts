import type { FastifyInstance } from "fastify";
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { AppError } from "@renderbus/errors";
import type { Logger } from "@renderbus/telemetry";
import { sendError } from "./errors.js";
import { UPLOADS_PATH } from "../uploads/tus-server.js";

export interface BodyDeadlines {
  /** REQUEST_BODY_TIMEOUT_MS: a body read into memory (JSON, the inline upload) must have arrived by then. */
  bodyMs: number;
  /** UPLOAD_REQUEST_TIMEOUT_MS: a tus request's body (streamed to the store) must have arrived by then. */
  uploadMs: number;
}

// The tus routes' bodies go to the upload store as they arrive (uploads.protocol.ts); every other body is buffered.
const TUS_ROUTES = new Set([UPLOADS_PATH, `${UPLOADS_PATH}/:uploadId`]);

/**
 * A request whose body has not fully arrived by its deadline is ended (SPEC section 10: no single request can make
 * a replica unresponsive). Node's own request timeout is off under fastify, so without this a client could send all
 * but the last byte of a 1 MB body, unauthenticated (bodies are read before the handler authenticates), and hold the
 * buffered megabyte and the socket forever: a few hundred such connections exhaust the replica's memory.
 * A buffered body is answered 400 naming the deadline, then its connection closed (the rest is not coming); a tus
 * body is cut like a lost connection: the store keeps what arrived and the client resumes from that offset with a
 * new PATCH, as tus clients do.
 */
export function registerBodyDeadlines(app: FastifyInstance, deadlines: BodyDeadlines, logger: Logger): void {
  app.addHook("onRequest", (request, reply, done) => {
    const raw = request.raw;
    if (!carriesBody(raw) || raw.complete) return done();
    const tus = TUS_ROUTES.has(request.routeOptions.url ?? "");
    const ms = tus ? deadlines.uploadMs : deadlines.bodyMs;
    const timer = setTimeout(() => {
      if (raw.complete || raw.destroyed) return;
      logger.info({ requestId: request.id, method: request.method, path: request.routeOptions.url, ms }, "request body not received by its deadline; connection closed");
      // raw.destroy(), not raw.socket.destroy(): an unfinished request destroys its socket (Node's IncomingMessage),
      // and a request injected by light-my-request (tests, a shared worker's later files) has a socket without one.
      if (tus || reply.sent) return void raw.destroy();
      // The answer first, then the connection: the client reads why before its socket closes.
      reply.raw.once("finish", () => raw.destroy());
      sendError(bodyTimeout(ms), request, reply, logger);
    }, ms);
    timer.unref();
    const socket = raw.socket as Socket | null;
    const clear = () => {
      clearTimeout(timer);
      socket?.off?.("close", clear);
    };
    raw.once("end", clear);
    raw.once("close", clear);
    // A request answered with its connection closed before its body arrived (a refused body over the drain bound)
    // ends neither way: Node stops tracking a request once its answer is sent, so only the socket's close says the
    // rest is not coming. Without this, each such request kept its deadline, and the request with it, for a minute.
    // Removed again by `clear`, so a keep-alive connection does not gather one listener per request.
    if (typeof socket?.once === "function") socket.once("close", clear);
    // Answered before its body was read (a 401 from authentication, a 413): the rest is read and dropped, as Node's
    // server does for a connection it keeps, and its end clears the deadline; a body that stops arriving still meets
    // it. Said here too for the requests light-my-request injects, which nothing else reads: their deadlines stayed
    // armed for a minute after the answer (and after their app closed).
    reply.raw.once("finish", () => {
      if (!raw.complete && !raw.destroyed) raw.resume();
    });
    done();
  });
}

function bodyTimeout(ms: number): AppError {
  return new AppError("VALIDATION_ERROR", `body: not received in full within ${Math.round(ms / 1000)} s`);
}

function carriesBody(raw: IncomingMessage): boolean {
  if (raw.headers["transfer-encoding"] !== undefined) return true;
  const length = raw.headers["content-length"];
  return length !== undefined && length !== "0";
}
