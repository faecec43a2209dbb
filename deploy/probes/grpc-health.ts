/**
 * Exit 0 when the gRPC server at the address argument answers the standard health check with SERVING, else 1.
 * For container health checks where a native gRPC probe is not available (docker compose):
 *   node deploy/probes/dist/grpc-health.mjs 127.0.0.1:50051   (bundled by scripts/build-image-tools.mjs; from source:
 *   node --import tsx deploy/probes/grpc-health.ts 127.0.0.1:50051)
 */
import { isRpcServing } from "@renderbus/rpc";

const address = process.argv[2] ?? "127.0.0.1:50051";
process.exit((await isRpcServing(address, 2000)) ? 0 : 1);
