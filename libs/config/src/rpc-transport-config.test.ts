import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, readRpcTlsFiles, rpcTransportConfigOf, type RpcTlsPaths, type RpcTransportVariables } from "./index.js";
import { createTestCertificateAuthority, type TestLeafCertificate } from "./test-fixtures/test-certificates.js";

/** "VARIABLE: message" of each problem, or [] when the config is accepted. */
function problemsOf(load: () => unknown): string[] {
  try {
    load();
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((problem) => `${problem.variable}: ${problem.message}`);
    throw error;
  }
}
const transportProblems = (config: RpcTransportVariables) => problemsOf(() => rpcTransportConfigOf(config));
const variablesOf = (problems: string[]) => problems.map((problem) => problem.split(":")[0]);

const FILES = { RPC_TLS_CA: "/etc/renderbus/rpc/ca.pem", RPC_TLS_CERT: "/etc/renderbus/rpc/tls.crt", RPC_TLS_KEY: "/etc/renderbus/rpc/tls.key" };

describe("RPC_TRANSPORT", () => {
  it("is plaintext when unset outside production (npm start, tests)", () => {
    for (const MODE of [undefined, "development", "test"]) expect(rpcTransportConfigOf({ MODE })).toEqual({ mode: "plaintext" });
    expect(rpcTransportConfigOf({ MODE: "development", RPC_TRANSPORT: "mesh" })).toEqual({ mode: "mesh" });
  });

  it("refuses to start in production without tls or mesh, naming RPC_TRANSPORT and the TLS files", () => {
    for (const RPC_TRANSPORT of [undefined, "", "plaintext"]) {
      const problems = transportProblems({ MODE: "production", RPC_TRANSPORT });
      expect(variablesOf(problems), String(RPC_TRANSPORT)).toEqual(["RPC_TRANSPORT"]);
      for (const named of ["RPC_TRANSPORT=tls", "RPC_TLS_CA", "RPC_TLS_CERT", "RPC_TLS_KEY", "RPC_TRANSPORT=mesh"]) expect(problems[0]).toContain(named);
    }
  });

  it("starts in production with mesh, or with tls and its three files", () => {
    expect(rpcTransportConfigOf({ MODE: "production", RPC_TRANSPORT: "mesh" })).toEqual({ mode: "mesh" });
    expect(rpcTransportConfigOf({ MODE: "production", RPC_TRANSPORT: "tls", ...FILES })).toEqual({
      mode: "tls",
      paths: { ca: FILES.RPC_TLS_CA, cert: FILES.RPC_TLS_CERT, key: FILES.RPC_TLS_KEY },
    });
  });

  it("refuses tls without all three files in any mode, naming each one missing", () => {
    expect(variablesOf(transportProblems({ MODE: "production", RPC_TRANSPORT: "tls" }))).toEqual(["RPC_TLS_CA", "RPC_TLS_CERT", "RPC_TLS_KEY"]);
    const problems = transportProblems({ MODE: "development", RPC_TRANSPORT: "tls", RPC_TLS_CA: FILES.RPC_TLS_CA, RPC_TLS_KEY: " " });
    expect(variablesOf(problems)).toEqual(["RPC_TLS_CERT", "RPC_TLS_KEY"]);
    expect(problems[0]).toContain("is required with RPC_TRANSPORT=tls");
  });

  it("refuses TLS files given without RPC_TRANSPORT=tls, which would leave the calls unencrypted", () => {
    expect(variablesOf(transportProblems({ MODE: "development", ...FILES }))).toEqual(["RPC_TLS_CA", "RPC_TLS_CERT", "RPC_TLS_KEY"]);
    expect(transportProblems({ MODE: "production", RPC_TRANSPORT: "mesh", RPC_TLS_CERT: FILES.RPC_TLS_CERT })).toEqual([
      "RPC_TLS_CERT: is only used with RPC_TRANSPORT=tls, which is mesh: set RPC_TRANSPORT=tls, or remove it",
    ]);
  });

  it("refuses a transport it does not know (from a raw environment, as the health probe reads it)", () => {
    expect(transportProblems({ RPC_TRANSPORT: "ssl" })).toEqual(["RPC_TRANSPORT: must be one of tls, mesh, plaintext"]);
  });
});

describe("readRpcTlsFiles", () => {
  let dir: string;
  let leaf: TestLeafCertificate;
  let otherLeaf: TestLeafCertificate;
  const pathsOf = (files: TestLeafCertificate): RpcTlsPaths => ({ ca: files.ca, cert: files.cert, key: files.key });

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "rpc-tls-config-"));
    const authority = createTestCertificateAuthority(dir, "renderbus");
    leaf = authority.issue("jobs");
    otherLeaf = authority.issue("auth");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("reads the CA, the certificate and its key once checked", () => {
    const files = readRpcTlsFiles(pathsOf(leaf));
    expect(files.ca.equals(readFileSync(leaf.ca))).toBe(true);
    expect(files.cert.equals(readFileSync(leaf.cert))).toBe(true);
    expect(files.key.equals(readFileSync(leaf.key))).toBe(true);
  });

  it("names each variable whose file cannot be read, with its path", () => {
    const missing = join(dir, "nowhere.pem");
    expect(problemsOf(() => readRpcTlsFiles({ ...pathsOf(leaf), ca: missing, key: missing }))).toEqual([
      `RPC_TLS_CA: cannot read ${missing} (ENOENT)`,
      `RPC_TLS_KEY: cannot read ${missing} (ENOENT)`,
    ]);
  });

  it("names a file that is not the PEM it should be, never printing a key's contents", () => {
    const garbage = join(dir, "garbage.pem");
    writeFileSync(garbage, "not a certificate");
    const brokenKey = join(dir, "broken.key");
    writeFileSync(brokenKey, "-----BEGIN PRIVATE KEY-----\nTOPSECRETKEYMATERIAL0123456789\n-----END PRIVATE KEY-----\n");
    const problems = problemsOf(() => readRpcTlsFiles({ ca: garbage, cert: leaf.key, key: brokenKey }));
    expect(variablesOf(problems)).toEqual(["RPC_TLS_CA", "RPC_TLS_CERT", "RPC_TLS_KEY"]);
    expect(problems[0]).toBe(`RPC_TLS_CA: ${garbage} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
    expect(problems[2]).toBe(`RPC_TLS_KEY: ${brokenKey} holds no unencrypted PEM private key`);
    expect(problems.join("\n")).not.toContain("TOPSECRET");
    expect(problems.join("\n")).not.toContain(readFileSync(leaf.key, "utf8").split("\n")[1]);
  });

  it("refuses a key that is not the certificate's", () => {
    expect(problemsOf(() => readRpcTlsFiles({ ...pathsOf(leaf), key: otherLeaf.key }))).toEqual([`RPC_TLS_KEY: ${otherLeaf.key} is not the key of the certificate in RPC_TLS_CERT (${leaf.cert})`]);
  });

  it("refuses a certificate another CA signed (every peer would refuse its handshakes), and takes a bundle of two CAs (a rotation)", () => {
    const foreign = createTestCertificateAuthority(dir, "foreign").issue("jobs");
    expect(problemsOf(() => readRpcTlsFiles({ ...pathsOf(leaf), cert: foreign.cert, key: foreign.key }))).toEqual([
      `RPC_TLS_CERT: ${foreign.cert}: the certificate is not signed by a CA in RPC_TLS_CA (${leaf.ca})`,
    ]);
    const bundle = join(dir, "bundle.pem");
    writeFileSync(bundle, readFileSync(leaf.ca, "utf8") + readFileSync(foreign.ca, "utf8"));
    expect(() => readRpcTlsFiles({ ca: bundle, cert: foreign.cert, key: foreign.key })).not.toThrow();
  });

  it("refuses a certificate past its validity", () => {
    const inThreeDays = new Date(Date.now() + 3 * 86_400_000);
    const problems = problemsOf(() => readRpcTlsFiles(pathsOf(leaf), inThreeDays));
    expect(variablesOf(problems)).toEqual(["RPC_TLS_CERT"]);
    expect(problems[0]).toContain("the certificate expired on");
  });
});
