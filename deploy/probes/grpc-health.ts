/**
 * Exit 0 when the gRPC server at the address argument answers the standard health check with SERVING, else 1.
 * For container health checks where a native gRPC probe is not available (docker compose), or cannot be used
 * (RPC_TRANSPORT=tls: the kubelet's gRPC probe presents no client certificate):
 *   node deploy/probes/dist/grpc-health.mjs 127.0.0.1:50051   (bundled by scripts/build-image-tools.mjs; from source:
 *   node --import tsx deploy/probes/grpc-health.ts 127.0.0.1:50051)
 * It connects the way the container's service does, from the same environment (RPC_TRANSPORT, RPC_TLS_*): with
 * `tls`, the service's certificate must then also name the probed host (`IP:127.0.0.1` above).
 */
import { ConfigError } from "@renderbus/config";
import { isRpcServing, loadRpcTransport, type RpcTransport } from "@renderbus/rpc";

const address = process.argv[2] ?? "127.0.0.1:50051";
let transport: RpcTransport;
try {
  transport = loadRpcTransport(process.env);
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`grpc-health: ${error.message}\n`);
  process.exit(1);
}
process.exit((await isRpcServing(address, 2000, "", transport)) ? 0 : 1);
