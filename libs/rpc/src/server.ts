import { Server, Metadata, status, type ServiceDefinition, type ServerUnaryCall, type sendUnaryData } from "@grpc/grpc-js";
import { HealthImplementation } from "grpc-health-check";
import { SpanKind, context as otelContext, SpanStatusCode } from "@opentelemetry/api";
import { AppError, toAppError } from "@renderbus/errors";
import { contextFromTraceHeaders, tracer, type Logger } from "@renderbus/telemetry";
import type { AuthContext } from "./auth-context.js";
import { isCallerAllowed, rpcMethodOf, type CallerRule } from "./callers.js";
import { toServiceError } from "./errors.js";
import { CallTokenError, type Caller, type ServiceIdentity } from "./service-tokens.js";

/** What a handler sees besides its request. */
export interface CallContext {
  /** The service that made the call, proven by its token. */
  caller: Caller;
  /** The tenant the call acts for, from the caller's verified token (the gateway's tokens for a user or key). */
  auth: AuthContext | undefined;
  /** The auth context, or UNAUTHORIZED when absent: for handlers that act for an org. */
  requireAuth(): AuthContext;
  metadata: Metadata;
}

/** A service implementation whose methods are async functions; errors thrown as AppError keep their error code (docs/concepts.md#errors). */
export type AsyncService<Impl> = {
  // ts-proto's server interfaces extend grpc-js's UntypedServiceImplementation, whose string index signature must
  // not become a required member here.
  [Method in keyof Impl as string extends Method ? never : Method]: Impl[Method] extends (call: ServerUnaryCall<infer Req, infer Res>, callback: sendUnaryData<infer _Res2>) => void
    ? (request: Req, context: CallContext) => Promise<Res>
    : never;
};

export interface RpcServer {
  server: Server;
  add<Impl>(definition: ServiceDefinition<any>, implementation: AsyncService<Impl>): void;
  /** Binds to 127.0.0.1:`port` (0 picks a free one), marks services SERVING, and returns the bound port. */
  listen(port: number, host?: string): Promise<number>;
  /** Health NOT_SERVING first (load balancers stop sending), then finishes in-flight calls. */
  shutdown(graceMs?: number): Promise<void>;
  /**
   * Reports a dependency's state through gRPC health once listening: `false` (e.g. a JetStream consume loop that is
   * down, `Bus.onReadinessChange`) answers NOT_SERVING until `true` again. No effect before `listen` or after `shutdown`.
   */
  setServing(serving: boolean): void;
}

/** The metadata entry carrying the call token: `authorization: Bearer <jwt>`. */
export const CALL_TOKEN_METADATA = "authorization";

/**
 * The verified caller of a call, or AppError: UNAUTHORIZED (gRPC UNAUTHENTICATED) without a valid token for this
 * service (or a tenant method called by the gateway for no tenant), FORBIDDEN (PERMISSION_DENIED) when the token is
 * valid but the method does not accept its caller.
 */
async function authenticate(identity: ServiceIdentity, metadata: Metadata, rule: CallerRule): Promise<Caller> {
  const header = metadata.get(CALL_TOKEN_METADATA)[0];
  const token = typeof header === "string" && header.startsWith("Bearer ") ? header.slice("Bearer ".length) : undefined;
  if (!token) throw new CallTokenError("no call token");
  const caller = await identity.verify(token);
  if (!isCallerAllowed(rule, caller)) {
    // The gateway's own token on a tenant method: it acts for nobody, like a request without credentials.
    if (rule.kind === "tenant" && caller.service === "gateway") throw new AppError("UNAUTHORIZED", "Authentication is invalid or expired");
    throw new AppError("FORBIDDEN", `${caller.service} may not call this method`);
  }
  return caller;
}

/**
 * A grpc-js server with the standard health service (no call token, for probes) and, on every other method, the
 * call-token check of `identity` against the method's caller rule (callers.ts) before the handler runs, and one error
 * mapping for every handler. It listens with `identity.transport`: with `tls`, a connection without a client
 * certificate signed by the CA is refused before any method, health included, is reached.
 */
export function createRpcServer(identity: ServiceIdentity, logger?: Logger): RpcServer {
  const server = new Server();
  const health = new HealthImplementation({ "": "NOT_SERVING" });
  health.addToServer(server);
  const names: string[] = [];
  let listening = false;
  let dependenciesServing = true;
  const report = () => {
    const state = listening && dependenciesServing ? "SERVING" : "NOT_SERVING";
    health.setStatus("", state);
    for (const name of names) health.setStatus(name, state);
  };

  return {
    server,
    add(definition, implementation) {
      const handlers: Record<string, (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => void> = {};
      for (const [method, spec] of Object.entries(definition)) {
        const path = (spec as { path: string }).path;
        const known = rpcMethodOf(path);
        if (!known) throw new Error(`${path} has no caller rule (libs/rpc/src/callers.ts)`);
        if (known.audience !== identity.service) throw new Error(`${path} is served by ${known.audience}, not ${identity.service}`);
        const handler = (implementation as Record<string, (request: unknown, context: CallContext) => Promise<unknown>>)[method];
        if (!handler) {
          // Like grpc-js for an unknown method: partial implementations (test stand-ins) answer UNIMPLEMENTED.
          handlers[method] = (_call, callback) => callback({ code: status.UNIMPLEMENTED, details: `${method} is not implemented` } as never, null);
          continue;
        }
        handlers[method] = (call, callback) => {
          const metadata = call.metadata;
          const traceHeaders: Record<string, string> = {};
          const traceparent = metadata.get("traceparent")[0];
          if (typeof traceparent === "string") traceHeaders.traceparent = traceparent;
          otelContext.with(contextFromTraceHeaders(traceHeaders), () =>
            tracer().startActiveSpan(path, { kind: SpanKind.SERVER }, (span) => {
              authenticate(identity, metadata, known.rule)
                .catch((error: unknown) => {
                  // Nothing of the call runs: the handler is never reached.
                  const reason = error instanceof Error ? error.message : String(error);
                  logger?.warn({ method: path, reason }, "rpc call refused");
                  throw error instanceof CallTokenError ? new AppError("UNAUTHORIZED", "The call carries no valid token for this service") : error;
                })
                .then((caller) => {
                  const auth = caller.auth;
                  const context: CallContext = {
                    caller,
                    auth,
                    metadata,
                    requireAuth: () => {
                      if (!auth) throw new AppError("UNAUTHORIZED", "Authentication is invalid or expired");
                      return auth;
                    },
                  };
                  return handler.call(implementation, call.request, context);
                })
                .then(
                  (response) => callback(null, response),
                  (error: unknown) => {
                    const appError = toAppError(error);
                    if (appError.code === "INTERNAL_ERROR") {
                      logger?.error({ err: error, method: path }, "rpc handler failed");
                      span.setStatus({ code: SpanStatusCode.ERROR });
                    }
                    callback(toServiceError(appError) as never, null);
                  },
                )
                .finally(() => span.end());
            }),
          );
        };
      }
      server.addService(definition, handlers);
      names.push(Object.values(definition)[0] ? String((Object.values(definition)[0] as { path: string }).path.split("/")[1]) : "");
    },
    listen(port, host = "127.0.0.1") {
      return new Promise((resolve, reject) => {
        server.bindAsync(`${host}:${port}`, identity.transport.serverCredentials, (error, boundPort) => {
          if (error) return reject(error);
          listening = true;
          report();
          resolve(boundPort);
        });
      });
    },
    setServing(serving) {
      dependenciesServing = serving;
      if (listening) report();
    },
    shutdown(graceMs = 5000) {
      listening = false;
      report();
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}
