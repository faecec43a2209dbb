import { credentials, makeGenericClientConstructor, type ClientReadableStream, type ServiceError } from "@grpc/grpc-js";
import { BinaryReader, BinaryWriter } from "@bufbuild/protobuf/wire";

/** grpc.health.v1 serving statuses, by their wire value. */
export const HEALTH_STATUS_NAMES = ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"] as const;

// grpc.health.v1 encoded by hand: two one-field messages (HealthCheckRequest{service=1},
// HealthCheckResponse{status=1}) do not justify a proto loader at runtime.
const encodeRequest = (service: string) => Buffer.from(new BinaryWriter().uint32(10).string(service).finish());
const decodeRequest = (bytes: Buffer) => new BinaryReader(bytes).string();
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

export function createHealthClient(address: string): HealthClient {
  return new HealthClient(address, credentials.createInsecure()) as HealthClient;
}

/** The health status name reported by the gRPC server at `address`; rejects when it cannot be reached in time. */
export function checkRpcHealth(address: string, timeoutMs = 1000, service = ""): Promise<string> {
  const client = createHealthClient(address);
  return new Promise((resolve, reject) =>
    client.check(service, { deadline: new Date(Date.now() + timeoutMs) }, (error, status) => {
      client.close();
      return error ? reject(error) : resolve(status);
    }),
  );
}

/** True when the gRPC server at `address` answers the standard health check with SERVING within the timeout. */
export function isRpcServing(address: string, timeoutMs = 1000, service = ""): Promise<boolean> {
  return checkRpcHealth(address, timeoutMs, service).then((status) => status === "SERVING", () => false);
}
