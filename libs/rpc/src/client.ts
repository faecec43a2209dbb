import { Metadata, type Client, type ServiceError, type ChannelCredentials, type ClientOptions } from "@grpc/grpc-js";
import { currentTraceHeaders } from "@renderbus/telemetry";
import type { AuthContext } from "./auth-context.js";
import { RPC_SERVICES } from "./callers.js";
import { fromServiceError } from "./errors.js";
import { PLAINTEXT_RPC_TRANSPORT } from "./rpc-transport.js";
import { CALL_TOKEN_METADATA } from "./server.js";
import type { ServiceName } from "./service-keys.js";
import type { CallCredentials } from "./service-tokens.js";

export interface CallOptions {
  /** The tenant the call acts for: goes into the call token (the gateway's calls for a user or API key). */
  auth?: AuthContext;
  /** Per-call deadline; every call has one (default below). */
  deadlineMs?: number;
}

const DEFAULT_DEADLINE_MS = 10_000;

/** Promise-returning view of a ts-proto grpc-js client: `await client.getJob({jobId}, {auth})`. */
export type PromiseClient<C> = {
  // ts-proto clients overload each method; the last overload is (request, metadata, options, callback).
  [Method in keyof C as C[Method] extends (request: any, metadata: Metadata, options: any, callback: (error: ServiceError | null, response: any) => void) => unknown
    ? Method
    : never]: C[Method] extends (request: infer Req, metadata: Metadata, options: any, callback: (error: ServiceError | null, response: infer Res) => void) => unknown
    ? (request: Req, options?: CallOptions) => Promise<Res>
    : never;
} & { close(): void };

type ClientConstructor<C> = (new (address: string, credentials: ChannelCredentials, options?: Partial<ClientOptions>) => C) & { service: object };

/** The process serving a generated client's service: the `aud` of its call tokens. */
function audienceOf(Constructor: { service: object }): ServiceName {
  const served = RPC_SERVICES.find((entry) => entry.definition === Constructor.service);
  if (!served) throw new Error("unknown gRPC service: add it to libs/rpc/src/callers.ts");
  return served.audience;
}

/**
 * Creates a client for a service at `address` (host:port) whose calls return promises, carry a deadline, the
 * caller's trace context and a call token from `credentials` (the calling service's identity, acting for the call's
 * `auth` when given), and fail with AppError (the error code when the server sent one, SERVICE_UNAVAILABLE when the
 * server cannot be reached, or refuses or fails the TLS handshake). It connects with `credentials.transport`: with
 * `tls`, the server's certificate must be signed by the CA and name `address`'s host in its SAN.
 */
export function createRpcClient<C extends Client>(Constructor: ClientConstructor<C>, address: string, credentials: CallCredentials): PromiseClient<C> {
  const audience = audienceOf(Constructor);
  const client = new Constructor(address, (credentials.transport ?? PLAINTEXT_RPC_TRANSPORT).channelCredentials, {
    "grpc.keepalive_time_ms": 30_000,
    "grpc.max_reconnect_backoff_ms": 2000,
  });
  return new Proxy({} as PromiseClient<C>, {
    get(_target, property: string) {
      if (property === "close") return () => client.close();
      if (property === "then") return undefined;
      const method = (client as unknown as Record<string, Function>)[property];
      if (typeof method !== "function") return undefined;
      const path = (Constructor.service as Record<string, { path: string } | undefined>)[property]?.path ?? property;
      return async (request: unknown, options: CallOptions = {}) => {
        const metadata = new Metadata();
        for (const [name, value] of Object.entries(currentTraceHeaders())) metadata.set(name, value);
        metadata.set(CALL_TOKEN_METADATA, `Bearer ${await credentials.tokenFor(audience, path, options.auth)}`);
        const deadline = new Date(Date.now() + (options.deadlineMs ?? DEFAULT_DEADLINE_MS));
        return new Promise((resolve, reject) => {
          method.call(client, request, metadata, { deadline }, (error: ServiceError | null, response: unknown) =>
            error ? reject(fromServiceError(error)) : resolve(response),
          );
        });
      };
    },
  });
}
