import { makeGenericClientConstructor, type ClientReadableStream, type ServiceError } from "@grpc/grpc-js";
import { BinaryReader, BinaryWriter } from "@bufbuild/protobuf/wire";
import { PLAINTEXT_RPC_TRANSPORT, type RpcTransport } from "./rpc-transport.js";

/** grpc.health.v1 serving statuses, by their wire value. */
export const HEALTH_STATUS_NAMES = ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"] as const;

// grpc.health.v1 encoded by hand: two one-field messages (HealthCheckRequest{service=1},
// HealthCheckResponse{status=1}) do not justify a proto loader at runtime.
const encodeRequest = (service: string) => Buffer.from(new BinaryWriter().uint32(10).string(service).finish());
function decodeRequest(bytes: Buffer): string {
  const reader = new BinaryReader(bytes);
  let service = "";
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    if (tag >>> 3 === 1) service = reader.string();
    else reader.skip(tag & 7);
  }
  return service;
}
const encodeStatus = (status: string) =>
  Buffer.from(new BinaryWriter().uint32(8).int32(Math.max(0, HEALTH_STATUS_NAMES.indexOf(status as never))).finish());
function decodeStatus(bytes: Buffer): string {
  const reader = new BinaryReader(bytes);
  let status = 0;
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    if (tag >>> 3 === 1) status = reader.int32();
    else reader.skip(tag & 7);
  }
  return HEALTH_STATUS_NAMES[status] ?? String(status);
}
const method = (name: string, responseStream: boolean) => ({
  path: `/grpc.health.v1.Health/${name}`,
  requestStream: false,
  responseStream,
  requestSerialize: encodeRequest,
  requestDeserialize: decodeRequest,
  responseSerialize: encodeStatus,
  responseDeserialize: decodeStatus,
});

/** A client for the standard health service: `check` answers a status name, `watch` streams them. */
export const HealthClient = makeGenericClientConstructor({ check: method("Check", false), watch: method("Watch", true) }, "grpc.health.v1.Health");
export type HealthClient = InstanceType<typeof HealthClient> & {
  check(service: string, options: { deadline: Date }, callback: (error: ServiceError | null, status: string) => void): void;
  watch(service: string): ClientReadableStream<string>;
};

/**
 * A health client of the server at `address`, connecting with `transport`: a server with `tls` answers only a client
 * with a certificate (the service's own, e.g. from its environment: `loadRpcTransport(process.env)`).
 */
export function createHealthClient(address: string, transport: RpcTransport = PLAINTEXT_RPC_TRANSPORT): HealthClient {
  return new HealthClient(address, transport.channelCredentials) as HealthClient;
}

/** The status name `client`'s server reports; rejects when it cannot be reached within `timeoutMs`. */
function statusOf(client: HealthClient, timeoutMs: number, service: string): Promise<string> {
  return new Promise((resolve, reject) =>
    client.check(service, { deadline: new Date(Date.now() + timeoutMs) }, (error, status) => (error ? reject(error) : resolve(status))),
  );
}

/**
 * Repeated health checks of one gRPC server over one channel, opened on the first check and kept (grpc-js
 * reconnects it when the server comes back). For probes that run often, such as a readiness endpoint: a channel per
 * check costs a TCP and HTTP/2 handshake each time, which a caller can make the prober pay (SECURITY-AUDIT finding 13).
 */
export class RpcHealthProbe {
  private client: HealthClient | undefined;

  constructor(
    private readonly address: string,
    private readonly transport: RpcTransport = PLAINTEXT_RPC_TRANSPORT,
  ) {}

  /** The status name the server reports; rejects when it cannot be reached in time. */
  status(timeoutMs = 1000, service = ""): Promise<string> {
    this.client ??= createHealthClient(this.address, this.transport);
    return statusOf(this.client, timeoutMs, service);
  }

  /** True when the server answers SERVING within the timeout. */
  isServing(timeoutMs = 1000, service = ""): Promise<boolean> {
    return this.status(timeoutMs, service).then((status) => status === "SERVING", () => false);
  }

  /** Closes the channel; a later check opens a new one. */
  close(): void {
    this.client?.close();
    this.client = undefined;
  }
}

/** The health status name reported by the gRPC server at `address`, over a channel opened for this one check. */
export function checkRpcHealth(address: string, timeoutMs = 1000, service = "", transport: RpcTransport = PLAINTEXT_RPC_TRANSPORT): Promise<string> {
  const probe = new RpcHealthProbe(address, transport);
  return probe.status(timeoutMs, service).finally(() => probe.close());
}

/** True when the gRPC server at `address` answers the standard health check with SERVING within the timeout. */
export function isRpcServing(address: string, timeoutMs = 1000, service = "", transport: RpcTransport = PLAINTEXT_RPC_TRANSPORT): Promise<boolean> {
  return checkRpcHealth(address, timeoutMs, service, transport).then((status) => status === "SERVING", () => false);
}
