import { credentials, ServerCredentials, type ChannelCredentials } from "@grpc/grpc-js";
import { readRpcTlsFiles, rpcTransportConfigOf, type RpcTlsFiles, type RpcTransportMode, type RpcTransportVariables } from "@renderbus/config";

/**
 * How a process's gRPC servers and clients protect their connections: the credentials of every `createRpcServer`,
 * `createRpcClient` and health probe, carried by the service's {@link ServiceIdentity} (service-tokens.ts).
 */
export interface RpcTransport {
  readonly mode: RpcTransportMode;
  /** What servers bind with: with `tls`, only clients presenting a certificate the CA signed get through. */
  readonly serverCredentials: ServerCredentials;
  /** What clients connect with: with `tls`, they present this service's certificate and check the server's. */
  readonly channelCredentials: ChannelCredentials;
}

/** Plaintext gRPC: development and tests, or (`mode: "mesh"`) behind a sidecar that encrypts. */
function plainRpcTransport(mode: "plaintext" | "mesh"): RpcTransport {
  return { mode, serverCredentials: ServerCredentials.createInsecure(), channelCredentials: credentials.createInsecure() };
}

/** The transport of a process whose config says nothing: plaintext (the default outside production). */
export const PLAINTEXT_RPC_TRANSPORT: RpcTransport = plainRpcTransport("plaintext");
const MESH_RPC_TRANSPORT: RpcTransport = plainRpcTransport("mesh");

/**
 * Mutual TLS from PEM contents: servers require a client certificate signed by `ca` (the health service too),
 * clients present `cert` and accept only a server whose certificate `ca` signed and whose SAN names the host they
 * dialled (the host of `*_GRPC_ADDRESS`; no target name override).
 */
export function tlsRpcTransport(files: RpcTlsFiles): RpcTransport {
  return {
    mode: "tls",
    serverCredentials: ServerCredentials.createSsl(files.ca, [{ private_key: files.key, cert_chain: files.cert }], true),
    channelCredentials: credentials.createSsl(files.ca, files.key, files.cert),
  };
}

// Per process, the files of each path triple are read once: the gateway's identity and its readiness probes share
// one read. A rotation is a restart with the new files.
const loaded = new Map<string, RpcTransport>();

/**
 * The transport `config` (a service's, or a probe's environment) asks for, its TLS files read and checked on the
 * first call. Plaintext when RPC_TRANSPORT is unset outside production.
 * @throws {ConfigError} naming the variables at fault: production without `tls` or `mesh`, `tls` without its three
 *   files, a file that cannot be read or is not the PEM it should be (see rpcTransportConfigOf, readRpcTlsFiles).
 */
export function loadRpcTransport(config: RpcTransportVariables): RpcTransport {
  const chosen = rpcTransportConfigOf(config);
  if (chosen.mode !== "tls") return chosen.mode === "mesh" ? MESH_RPC_TRANSPORT : PLAINTEXT_RPC_TRANSPORT;
  const { ca, cert, key } = chosen.paths;
  const cacheKey = JSON.stringify([ca, cert, key]);
  let transport = loaded.get(cacheKey);
  if (!transport) {
    transport = tlsRpcTransport(readRpcTlsFiles(chosen.paths));
    loaded.set(cacheKey, transport);
  }
  return transport;
}
