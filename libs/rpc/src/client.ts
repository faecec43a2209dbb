import { credentials, Metadata, type Client, type ServiceError, type ChannelCredentials, type ClientOptions } from "@grpc/grpc-js";
import { currentTraceHeaders } from "@renderbus/telemetry";
import { writeAuthMetadata, type AuthContext } from "./auth-metadata.js";
import { fromServiceError } from "./errors.js";

export interface CallOptions {
  /** Forwarded to the callee as metadata. */
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

type ClientConstructor<C> = new (address: string, credentials: ChannelCredentials, options?: Partial<ClientOptions>) => C;

/**
 * Creates a client for a service at `address` (host:port) whose calls return promises, carry a deadline, the
 * caller's trace context and auth context, and fail with AppError (the SPEC code when the server sent one,
 * SERVICE_UNAVAILABLE when the server cannot be reached).
 */
export function createRpcClient<C extends Client>(Constructor: ClientConstructor<C>, address: string): PromiseClient<C> {
  const client = new Constructor(address, credentials.createInsecure(), {
    "grpc.keepalive_time_ms": 30_000,
    "grpc.max_reconnect_backoff_ms": 2000,
  });
  return new Proxy({} as PromiseClient<C>, {
    get(_target, property: string) {
      if (property === "close") return () => client.close();
      if (property === "then") return undefined;
      const method = (client as unknown as Record<string, Function>)[property];
      if (typeof method !== "function") return undefined;
      return (request: unknown, options: CallOptions = {}) =>
        new Promise((resolve, reject) => {
          const metadata = new Metadata();
          for (const [name, value] of Object.entries(currentTraceHeaders())) metadata.set(name, value);
          if (options.auth) writeAuthMetadata(metadata, options.auth);
          const deadline = new Date(Date.now() + (options.deadlineMs ?? DEFAULT_DEADLINE_MS));
          method.call(client, request, metadata, { deadline }, (error: ServiceError | null, response: unknown) =>
            error ? reject(fromServiceError(error)) : resolve(response),
          );
        });
    },
  });
}
