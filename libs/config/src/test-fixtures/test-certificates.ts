/**
 * Throwaway certificates for tests, made with the `openssl` CLI the way docs/operations.md tells operators to make
 * theirs ("gRPC transport"): a CA, and leaf certificates it signs for servers and clients alike. EC P-256, valid one
 * day.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

/** Paths of one leaf's PEM files, in the shape of RPC_TLS_*. */
export interface TestLeafCertificate {
  /** The CA that signed it (RPC_TLS_CA). */
  ca: string;
  cert: string;
  key: string;
}

export interface TestCertificateAuthority {
  /** Its certificate (PEM path): what RPC_TLS_CA names. */
  ca: string;
  /** A leaf certificate and key for `name`, with the SANs given (default `DNS:localhost` and `IP:127.0.0.1`). */
  issue(name: string, subjectAltNames?: string[]): TestLeafCertificate;
}

const openssl = (args: string[]) => execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });

/** A new CA named `name`, its files in `dir` (which must exist). */
export function createTestCertificateAuthority(dir: string, name: string): TestCertificateAuthority {
  const ca = join(dir, `${name}-ca.pem`);
  const caKey = join(dir, `${name}-ca.key`);
  const caExtensions = ["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"];
  openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", caKey, "-out", ca, "-days", "1", "-subj", `/CN=${name} test CA`, ...caExtensions]);
  return {
    ca,
    issue(leafName, subjectAltNames = ["DNS:localhost", "IP:127.0.0.1"]) {
      const base = join(dir, `${name}-${leafName}`);
      const extensions = `${base}.ext`;
      writeFileSync(extensions, [`subjectAltName=${subjectAltNames.join(",")}`, "basicConstraints=CA:FALSE", "keyUsage=critical,digitalSignature", "extendedKeyUsage=serverAuth,clientAuth", ""].join("\n"));
      openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", `${base}.key`, "-out", `${base}.csr`, "-subj", `/CN=${leafName}`]);
      openssl(["x509", "-req", "-in", `${base}.csr`, "-CA", ca, "-CAkey", caKey, "-set_serial", `0x${randomBytes(8).toString("hex")}`, "-days", "1", "-extfile", extensions, "-out", `${base}.pem`]);
      return { ca, cert: `${base}.pem`, key: `${base}.key` };
    },
  };
}
