import { createPrivateKey, X509Certificate, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { ConfigError } from "./config-error.js";

/**
 * How gRPC calls between services are protected (`RPC_TRANSPORT`):
 * - `tls`: mutual TLS, each service with its certificate and key (`RPC_TLS_CERT`, `RPC_TLS_KEY`), each end checking
 *   the other's against `RPC_TLS_CA`;
 * - `mesh`: the operator states that a service mesh (Linkerd, Istio in STRICT mode) encrypts and authenticates the
 *   pods' traffic, so the processes speak plaintext to their sidecars;
 * - `plaintext`: nothing encrypts the calls; development and tests on one machine.
 */
export const RPC_TRANSPORTS = ["tls", "mesh", "plaintext"] as const;
export type RpcTransportMode = (typeof RPC_TRANSPORTS)[number];

/** The variables the transport is chosen from; a parsed service config or the raw environment (a probe's). */
export interface RpcTransportVariables {
  MODE?: string | undefined;
  RPC_TRANSPORT?: string | undefined;
  RPC_TLS_CA?: string | undefined;
  RPC_TLS_CERT?: string | undefined;
  RPC_TLS_KEY?: string | undefined;
}

/** Paths of the PEM files of `tls`, by what they hold. */
export interface RpcTlsPaths {
  ca: string;
  cert: string;
  key: string;
}

/** The chosen transport; `tls` with the paths of its files (read by {@link readRpcTlsFiles}). */
export type RpcTransportConfig = { mode: "plaintext" | "mesh" } | { mode: "tls"; paths: RpcTlsPaths };

/** The contents of the `tls` files, checked: certificates that parse, a key that belongs to the certificate. */
export interface RpcTlsFiles {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

const TLS_VARIABLES = { ca: "RPC_TLS_CA", cert: "RPC_TLS_CERT", key: "RPC_TLS_KEY" } as const;
const TLS_VARIABLE_LIST = "RPC_TLS_CA, RPC_TLS_CERT and RPC_TLS_KEY";

const isSet = (value: string | undefined): value is string => value !== undefined && value.trim() !== "";

/**
 * The transport `config` asks for. Unset `RPC_TRANSPORT` means `plaintext`, except with MODE=production, which
 * requires `tls` (with its three files) or `mesh`. `tls` requires all three files in every mode; a file variable set
 * with another transport is refused too, so that nobody believes the calls encrypted when they are not.
 * @throws {ConfigError} naming each variable at fault.
 */
export function rpcTransportConfigOf(config: RpcTransportVariables): RpcTransportConfig {
  const requested = config.RPC_TRANSPORT?.trim() || undefined;
  if (requested !== undefined && !(RPC_TRANSPORTS as readonly string[]).includes(requested)) {
    throw new ConfigError([{ variable: "RPC_TRANSPORT", message: `must be one of ${RPC_TRANSPORTS.join(", ")}` }]);
  }
  const mode = requested as RpcTransportMode | undefined;
  if (config.MODE === "production" && mode !== "tls" && mode !== "mesh") {
    throw new ConfigError([
      {
        variable: "RPC_TRANSPORT",
        message: `${mode === undefined ? "is required" : `may not be ${mode}`} in production: set RPC_TRANSPORT=tls with ${TLS_VARIABLE_LIST} (mutual TLS), or RPC_TRANSPORT=mesh where a service mesh encrypts the pods' traffic`,
      },
    ]);
  }
  const entries = Object.entries(TLS_VARIABLES) as [keyof RpcTlsPaths, (typeof TLS_VARIABLES)[keyof RpcTlsPaths]][];
  if (mode === "tls") {
    const missing = entries.filter(([, variable]) => !isSet(config[variable]));
    if (missing.length > 0) throw new ConfigError(missing.map(([, variable]) => ({ variable, message: `is required with RPC_TRANSPORT=tls (${TLS_VARIABLE_LIST}: PEM files)` })));
    return { mode, paths: Object.fromEntries(entries.map(([part, variable]) => [part, config[variable]!.trim()])) as unknown as RpcTlsPaths };
  }
  const stray = entries.filter(([, variable]) => isSet(config[variable]));
  if (stray.length > 0) {
    throw new ConfigError(stray.map(([, variable]) => ({ variable, message: `is only used with RPC_TRANSPORT=tls, which is ${mode === undefined ? "not set (plaintext)" : mode}: set RPC_TRANSPORT=tls, or remove it` })));
  }
  return { mode: mode ?? "plaintext" };
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n[\s\S]*?\r?\n-----END \1-----/g;

/** The certificates of a PEM file, or a reason; never the file's contents. */
function certificatesOf(pem: Buffer): X509Certificate[] | string {
  const blocks = [...pem.toString("latin1").matchAll(PEM_BLOCK)].filter((match) => match[1] === "CERTIFICATE");
  if (blocks.length === 0) return "holds no PEM certificate (-----BEGIN CERTIFICATE-----)";
  try {
    return blocks.map((block) => new X509Certificate(block[0]));
  } catch {
    return "holds a PEM certificate that does not parse";
  }
}

/**
 * Whether `chain` (a certificate, then the intermediates that signed it, in order) ends at one of `authorities`: each
 * certificate signed by the next, the last signed by an authority or being one.
 */
function chainsTo(chain: X509Certificate[], authorities: X509Certificate[]): boolean {
  const signedBy = (child: X509Certificate, parent: X509Certificate) => child.checkIssued(parent) && child.verify(parent.publicKey);
  const top = chain.at(-1)!;
  return (
    chain.every((certificate, index) => index === chain.length - 1 || signedBy(certificate, chain[index + 1]!)) &&
    authorities.some((authority) => authority.fingerprint256 === top.fingerprint256 || signedBy(top, authority))
  );
}

/**
 * Reads the PEM files of `tls` once, at start-up, and checks them: the CA file and the certificate file hold
 * certificates, the certificate is within its validity period and signed by a CA of the CA file, the key file holds an unencrypted private key that
 * belongs to the certificate. A rotation is a restart with new files.
 * @throws {ConfigError} naming each variable whose file cannot be read or is not what it should be. The messages
 *   name the path, never the contents.
 */
export function readRpcTlsFiles(paths: RpcTlsPaths, now: Date = new Date()): RpcTlsFiles {
  const problems: { variable: string; message: string }[] = [];
  const read = (part: keyof RpcTlsPaths): Buffer | undefined => {
    try {
      return readFileSync(paths[part]);
    } catch (error) {
      problems.push({ variable: TLS_VARIABLES[part], message: `cannot read ${paths[part]} (${(error as NodeJS.ErrnoException).code ?? "read error"})` });
      return undefined;
    }
  };
  const ca = read("ca");
  const cert = read("cert");
  const key = read("key");

  let authorities: X509Certificate[] | undefined;
  if (ca) {
    const certificates = certificatesOf(ca);
    if (typeof certificates === "string") problems.push({ variable: TLS_VARIABLES.ca, message: `${paths.ca} ${certificates}` });
    else authorities = certificates;
  }
  let leaf: X509Certificate | undefined;
  if (cert) {
    const certificates = certificatesOf(cert);
    if (typeof certificates === "string") problems.push({ variable: TLS_VARIABLES.cert, message: `${paths.cert} ${certificates}` });
    else {
      leaf = certificates[0]!;
      if (new Date(leaf.validTo) < now) problems.push({ variable: TLS_VARIABLES.cert, message: `${paths.cert}: the certificate expired on ${leaf.validTo}` });
      else if (new Date(leaf.validFrom) > now) problems.push({ variable: TLS_VARIABLES.cert, message: `${paths.cert}: the certificate is not valid before ${leaf.validFrom}` });
      // Every peer checks this certificate against its own RPC_TLS_CA: one the CA did not sign would fail each
      // handshake later, as an unavailable peer rather than a refused start.
      if (authorities && !chainsTo(certificates, authorities)) {
        problems.push({ variable: TLS_VARIABLES.cert, message: `${paths.cert}: the certificate is not signed by a CA in RPC_TLS_CA (${paths.ca})` });
      }
    }
  }
  if (key) {
    let privateKey: KeyObject | undefined;
    // The key's own parse error is not passed on: it could quote the key.
    const isPem = [...key.toString("latin1").matchAll(PEM_BLOCK)].some((match) => match[1]!.endsWith("PRIVATE KEY"));
    try {
      if (isPem) privateKey = createPrivateKey({ key, format: "pem" });
    } catch {
      privateKey = undefined;
    }
    if (!privateKey) problems.push({ variable: TLS_VARIABLES.key, message: `${paths.key} holds no unencrypted PEM private key` });
    else if (leaf && !leaf.checkPrivateKey(privateKey)) problems.push({ variable: TLS_VARIABLES.key, message: `${paths.key} is not the key of the certificate in RPC_TLS_CERT (${paths.cert})` });
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { ca: ca!, cert: cert!, key: key! };
}
