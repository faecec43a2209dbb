import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentials as grpcCredentials, ServerCredentials } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jobs } from "@renderbus/contracts";
import { createTestCertificateAuthority, type TestLeafCertificate } from "../../config/src/test-fixtures/test-certificates.js";
import { createRpcClient, type PromiseClient } from "./client.js";
import { checkRpcHealth, isRpcServing } from "./health-client.js";
import { loadRpcTransport, tlsRpcTransport, type RpcTransport } from "./rpc-transport.js";
import { createRpcServer, type AsyncService, type RpcServer } from "./server.js";
import { serviceKeyringOf, type ServiceName } from "./service-keys.js";
import { productionTestServiceTokenKeys } from "./test-callers.js";
import { ServiceIdentity, serviceIdentity, type CallCredentials } from "./service-tokens.js";

// Mutual TLS between real grpc-js servers and clients on 127.0.0.1, with a CA and certificates made by openssl for
// this file (docs/operations.md, "gRPC transport"). Every identity is built the way a production service builds its
// own: serviceIdentity(service, config) with MODE=production, its own call-token keys and RPC_TLS_* files.

const AUTH = { userId: "usr_1", orgId: "org_1", plan: "pro", role: "owner" };

let dir: string;
/** Signed by the deployment's CA. */
const trusted = {} as Record<"jobs" | "gateway" | "worker" | "jobsOtherHost", TestLeafCertificate>;
/** Signed by a CA nobody here trusts. */
const rogue = {} as Record<"jobs" | "gateway", TestLeafCertificate>;

/** A production identity of `service` presenting `leaf`'s certificate and trusting `ca` (the leaf's CA unless given). */
function identityOf(service: ServiceName, leaf: TestLeafCertificate, ca = leaf.ca): ServiceIdentity {
  return serviceIdentity(service, {
    MODE: "production",
    SERVICE_TOKEN_KEYS: productionTestServiceTokenKeys(service),
    RPC_TRANSPORT: "tls",
    RPC_TLS_CA: ca,
    RPC_TLS_CERT: leaf.cert,
    RPC_TLS_KEY: leaf.key,
  });
}

/**
 * A production identity presenting a certificate `ca` did not sign: serviceIdentity refuses to start with one (the
 * start-up check of RPC_TLS_CERT), so this one is built past that check, as a misconfigured or hostile peer would be.
 */
function impostorOf(service: ServiceName, leaf: TestLeafCertificate, ca: string): ServiceIdentity {
  expect(() => identityOf(service, leaf, ca)).toThrow(/RPC_TLS_CERT: .* not signed by a CA in RPC_TLS_CA/);
  const transport = tlsRpcTransport({ ca: readFileSync(ca), cert: readFileSync(leaf.cert), key: readFileSync(leaf.key) });
  return new ServiceIdentity(service, serviceKeyringOf(service, { MODE: "production", SERVICE_TOKEN_KEYS: productionTestServiceTokenKeys(service) }), transport);
}

/** A Jobs server of `identity` whose handlers count the calls that reach them. */
async function countingJobsServer(identity: ServiceIdentity) {
  const counts = { handled: 0 };
  const server: RpcServer = createRpcServer(identity);
  // The server answers UNIMPLEMENTED for the methods left out.
  server.add(jobs.JobsService, {
    getJob: async ({ jobId }, context) => {
      counts.handled += 1;
      return jobs.Job.fromPartial({ id: jobId, orgId: context.requireAuth().orgId, status: "waiting" });
    },
    startJob: async ({ jobId }) => {
      counts.handled += 1;
      return { job: jobs.Job.fromPartial({ id: jobId }) };
    },
  } as Partial<AsyncService<jobs.JobsServer>> as AsyncService<jobs.JobsServer>);
  const address = `127.0.0.1:${await server.listen(0)}`;
  return { server, address, counts };
}

const clients: PromiseClient<jobs.JobsClient>[] = [];
function clientOf(address: string, credentials: CallCredentials): PromiseClient<jobs.JobsClient> {
  const client = createRpcClient(jobs.JobsClient, address, credentials);
  clients.push(client);
  return client;
}
/** The call's failure, or the response when it did not fail. */
const outcomeOf = (call: Promise<unknown>) => call.catch((error: unknown) => error);

let jobsServer: Awaited<ReturnType<typeof countingJobsServer>>;
let gateway: ServiceIdentity;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "rpc-tls-"));
  const authority = createTestCertificateAuthority(dir, "renderbus");
  trusted.jobs = authority.issue("jobs");
  trusted.gateway = authority.issue("gateway");
  trusted.worker = authority.issue("worker");
  trusted.jobsOtherHost = authority.issue("jobs-other-host", ["DNS:jobs.renderbus.svc.cluster.local"]);
  const stranger = createTestCertificateAuthority(dir, "stranger");
  rogue.jobs = stranger.issue("jobs");
  rogue.gateway = stranger.issue("gateway");

  jobsServer = await countingJobsServer(identityOf("jobs", trusted.jobs));
  gateway = identityOf("gateway", trusted.gateway);
});

afterAll(async () => {
  for (const client of clients) client.close();
  await jobsServer?.server.shutdown(1000);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("gRPC over mutual TLS (RPC_TRANSPORT=tls)", () => {
  it("carries a call from a client whose certificate the CA signed, with the call token checked as before", async () => {
    expect(gateway.transport.mode).toBe("tls");
    const handled = jobsServer.counts.handled;
    await expect(clientOf(jobsServer.address, gateway).getJob({ jobId: "job_1" }, { auth: AUTH })).resolves.toMatchObject({ id: "job_1", orgId: "org_1" });
    expect(jobsServer.counts.handled).toBe(handled + 1);

    // A certificate admits the connection, not the call: the worker's token does not open a gateway-only method,
    // a call without the tenant is refused, and a token signed with keys jobs does not hold proves nothing.
    const worker = clientOf(jobsServer.address, identityOf("worker", trusted.worker));
    await expect(worker.getJob({ jobId: "job_1" }, { auth: AUTH })).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(clientOf(jobsServer.address, gateway).getJob({ jobId: "job_1" })).rejects.toMatchObject({ code: "UNAUTHORIZED" });
    const forged: CallCredentials = { transport: gateway.transport, tokenFor: (audience, method, auth) => gateway.tokenFor(audience, method, auth).then((token) => `${token.slice(0, -4)}AAAA`) };
    await expect(clientOf(jobsServer.address, forged).getJob({ jobId: "job_1" }, { auth: AUTH })).rejects.toMatchObject({ code: "UNAUTHORIZED" });
    expect(jobsServer.counts.handled).toBe(handled + 1);
    await expect(worker.startJob({ jobId: "job_2", workerId: "w" })).resolves.toMatchObject({ job: { id: "job_2" } });
    expect(jobsServer.counts.handled).toBe(handled + 2);
  });

  it("answers health checks to a client with a certificate only", async () => {
    expect(await checkRpcHealth(jobsServer.address, 2000, "", gateway.transport)).toBe("SERVING");
    expect(await isRpcServing(jobsServer.address, 2000)).toBe(false);
  });

  it("gives a plaintext client nothing: its call fails and no handler runs", async () => {
    const handled = jobsServer.counts.handled;
    const plaintext = serviceIdentity("gateway", { SERVICE_TOKEN_KEYS: productionTestServiceTokenKeys("gateway") });
    expect(plaintext.transport.mode).toBe("plaintext");
    const error = await outcomeOf(clientOf(jobsServer.address, plaintext).getJob({ jobId: "job_1" }, { auth: AUTH, deadlineMs: 3000 }));
    expect(error).toMatchObject({ code: "SERVICE_UNAVAILABLE" });
    expect(jobsServer.counts.handled).toBe(handled);
  });

  it("refuses a client whose certificate another CA signed, and one with no certificate", async () => {
    const handled = jobsServer.counts.handled;
    // Trusts the right CA, so it would accept the server; the server does not accept it.
    const impostor = impostorOf("gateway", rogue.gateway, trusted.gateway.ca);
    expect(await outcomeOf(clientOf(jobsServer.address, impostor).getJob({ jobId: "job_1" }, { auth: AUTH, deadlineMs: 3000 }))).toMatchObject({ code: "SERVICE_UNAVAILABLE" });

    const serverOnlyTls: RpcTransport = { mode: "tls", serverCredentials: ServerCredentials.createInsecure(), channelCredentials: grpcCredentials.createSsl(readFileSync(trusted.gateway.ca)) };
    const anonymous: CallCredentials = { transport: serverOnlyTls, tokenFor: (audience, method, auth) => gateway.tokenFor(audience, method, auth) };
    expect(await outcomeOf(clientOf(jobsServer.address, anonymous).getJob({ jobId: "job_1" }, { auth: AUTH, deadlineMs: 3000 }))).toMatchObject({ code: "SERVICE_UNAVAILABLE" });
    expect(jobsServer.counts.handled).toBe(handled);
  });

  it.each([
    // Would accept the gateway's certificate (it trusts the deployment's CA); the client refuses it.
    ["another CA signed", () => impostorOf("jobs", rogue.jobs, trusted.jobs.ca)],
    // Signed by the right CA, for jobs.renderbus.svc.cluster.local: not the host the client dialled (127.0.0.1).
    ["does not name the host dialled", () => identityOf("jobs", trusted.jobsOtherHost)],
  ])("refuses a server whose certificate %s", async (_case, identity) => {
    const server = await countingJobsServer(identity());
    try {
      expect(await outcomeOf(clientOf(server.address, gateway).getJob({ jobId: "job_1" }, { auth: AUTH, deadlineMs: 3000 }))).toMatchObject({ code: "SERVICE_UNAVAILABLE" });
      expect(await isRpcServing(server.address, 2000, "", gateway.transport)).toBe(false);
      expect(server.counts.handled).toBe(0);
    } finally {
      await server.server.shutdown(100);
    }
  });

  it("reads the files of a process once: the identity and a probe built from the same config share them", () => {
    const config = { MODE: "production", RPC_TRANSPORT: "tls", RPC_TLS_CA: trusted.gateway.ca, RPC_TLS_CERT: trusted.gateway.cert, RPC_TLS_KEY: trusted.gateway.key };
    expect(loadRpcTransport(config)).toBe(gateway.transport);
  });
});
