import { credentials as grpcCredentials, Metadata, ServerCredentials, status as grpcStatus, type ServiceError } from "@grpc/grpc-js";
import { trace } from "@opentelemetry/api";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jobs } from "@renderbus/contracts";
import { AppError, ERROR_CODES, type ErrorCode } from "@renderbus/errors";
import { startTracing, tracer, type Tracing } from "@renderbus/telemetry";
import { createRpcClient, type PromiseClient } from "./client.js";
import { devServiceIdentity } from "./test-callers.js";
import { checkRpcHealth, createHealthClient, isRpcServing } from "./health-client.js";
import { createRpcServer, type AsyncService, type CallContext, type RpcServer } from "./server.js";

const SERVICE_NAME = "renderbus.jobs.v1.Jobs";
const notUnderTest = async (): Promise<never> => {
  throw new Error("not under test");
};

/** What the fake's handlers saw, for assertions on metadata. */
const seen: { context?: CallContext; traceId?: string; handled: number } = { handled: 0 };
let releaseSlowCall: (() => void) | undefined;

/**
 * A partial Jobs service: `getJob` behaves according to the requested job id (`throw:<CODE>`, `crash`, `slow`,
 * `hang`), `listJobTypes` answers for the caller from the auth context; the other methods throw.
 */
const fakeJobs: AsyncService<jobs.JobsServer> = {
  getJob: async ({ jobId }, context) => {
    seen.context = context;
    seen.handled += 1;
    seen.traceId = trace.getActiveSpan()?.spanContext().traceId;
    if (jobId.startsWith("throw:")) {
      const code = jobId.slice("throw:".length) as ErrorCode;
      throw new AppError(code, `message for ${code}`);
    }
    if (jobId === "crash") throw new Error("connection to postgres://admin:hunter2@db failed");
    if (jobId === "slow") await new Promise<void>((resolve) => (releaseSlowCall = resolve));
    if (jobId === "hang") await new Promise((resolve) => setTimeout(resolve, 2000));
    return jobs.Job.fromPartial({ id: jobId, orgId: context.auth?.orgId ?? "", type: "extract.metadata", status: "waiting" });
  },
  listJobTypes: async (_request, context) => {
    seen.context = context;
    seen.handled += 1;
    const auth = context.requireAuth();
    return { jobTypes: [jobs.JobType.fromPartial({ name: `for:${auth.orgId}:${auth.userId}:${auth.plan}:${auth.role ?? ""}` })] };
  },
  submitJob: notUnderTest,
  listJobs: notUnderTest,
  cancelJob: notUnderTest,
  submitBatch: notUnderTest,
  getBatch: notUnderTest,
  listBatches: notUnderTest,
  startJob: async ({ jobId }, context) => {
    seen.handled += 1;
    return { job: jobs.Job.fromPartial({ id: jobId, orgId: context.auth?.orgId ?? "" }) };
  },
  completeJob: notUnderTest,
  failJob: notUnderTest,
  holdJob: notUnderTest,
};

const healthProbe = createHealthClient;
const checkHealth = (address: string, service = "") => checkRpcHealth(address, 2000, service);

let tracing: Tracing;
let server: RpcServer;
let address: string;
let client: PromiseClient<jobs.JobsClient>;

beforeAll(async () => {
  tracing = await startTracing({ service: "rpc-test", exporter: new InMemorySpanExporter() });
  server = createRpcServer(devServiceIdentity("jobs"));
  server.add(jobs.JobsService, fakeJobs);
  const port = await server.listen(0);
  address = `127.0.0.1:${port}`;
  client = createRpcClient(jobs.JobsClient, address, devServiceIdentity("gateway"));
});

afterAll(async () => {
  client?.close();
  await server?.shutdown(1000);
  await tracing?.shutdown();
});

const AUTH = { userId: "usr_1", orgId: "org_1", plan: "pro", role: "owner" };

describe("createRpcServer + createRpcClient", () => {
  it("returns the handler's response", async () => {
    const job = await client.getJob({ jobId: "job_1" }, { auth: AUTH });
    expect(job).toMatchObject({ id: "job_1", orgId: "org_1", status: "waiting" });
  });

  it.each(Object.keys(ERROR_CODES) as ErrorCode[])("round-trips AppError %s with its code and message", async (code) => {
    const error = await client.getJob({ jobId: `throw:${code}` }, { auth: AUTH }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ code, message: `message for ${code}` });
  });

  it("turns an unknown error into INTERNAL_ERROR without leaking its message", async () => {
    const error = (await client.getJob({ jobId: "crash" }, { auth: AUTH }).catch((caught: unknown) => caught)) as AppError;
    expect(error).toBeInstanceOf(AppError);
    expect(error.code).toBe("INTERNAL_ERROR");
    expect(error.message).toBe("Internal error");
    expect(JSON.stringify(error)).not.toContain("hunter2");
    expect(error.message).not.toContain("postgres");
  });

  it("delivers the caller's auth context in its call token", async () => {
    const response = await client.listJobTypes({}, { auth: AUTH });
    expect(response.jobTypes[0]?.name).toBe("for:org_1:usr_1:pro:owner");
    await client.getJob({ jobId: "job_meta" }, { auth: { userId: "usr_2", orgId: "org_2", plan: "free" } });
    expect(seen.context?.auth).toEqual({ userId: "usr_2", orgId: "org_2", plan: "free", role: undefined, credential: undefined });
    expect(seen.context?.caller.service).toBe("gateway");
  });

  it("answers UNAUTHORIZED from requireAuth when a call carries no auth context", async () => {
    await expect(client.listJobTypes({})).rejects.toMatchObject({ code: "UNAUTHORIZED" });
    expect(seen.context?.auth).toBeUndefined();
  });

  it("continues the caller's trace in the handler", async () => {
    const callerTraceId = await tracer().startActiveSpan("caller", async (span) => {
      await client.getJob({ jobId: "job_traced" }, { auth: AUTH });
      span.end();
      return span.spanContext().traceId;
    });
    expect(callerTraceId).not.toBe("0".repeat(32));
    expect(seen.traceId).toBe(callerTraceId);
  });

  it("fails with SERVICE_UNAVAILABLE when the deadline is exceeded", async () => {
    const started = Date.now();
    await expect(client.getJob({ jobId: "hang" }, { auth: AUTH, deadlineMs: 200 })).rejects.toMatchObject({ code: "SERVICE_UNAVAILABLE" });
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it("fails with SERVICE_UNAVAILABLE when the server is down", async () => {
    const probe = createRpcServer(devServiceIdentity("jobs"));
    probe.add(jobs.JobsService, fakeJobs);
    const port = await probe.listen(0);
    await probe.shutdown(100);
    const downClient = createRpcClient(jobs.JobsClient, `127.0.0.1:${port}`, devServiceIdentity("gateway"));
    try {
      const error = await downClient.getJob({ jobId: "job_1" }, { deadlineMs: 2000 }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(AppError);
      expect(error).toMatchObject({ code: "SERVICE_UNAVAILABLE" });
    } finally {
      downClient.close();
    }
  });
});

/** A call with exactly `metadata` (no token added), as any process on the network could make it. */
function rawGetJob(metadata: Metadata): Promise<ServiceError | undefined> {
  const raw = new jobs.JobsClient(address, grpcCredentials.createInsecure());
  return new Promise((resolve) =>
    raw.getJob({ jobId: "job_raw" }, metadata, { deadline: new Date(Date.now() + 5000) }, (error) => {
      raw.close();
      resolve(error ?? undefined);
    }),
  );
}

describe("call tokens", () => {
  it("refuses a call without a token with UNAUTHENTICATED, even with the old x-rb-* identity metadata, and never runs the handler", async () => {
    const handled = seen.handled;
    const metadata = new Metadata();
    for (const [key, value] of Object.entries({ "x-rb-user-id": "usr_1", "x-rb-org-id": "org_1", "x-rb-plan": "pro", "x-rb-role": "owner" })) metadata.set(key, value);
    expect(await rawGetJob(metadata)).toMatchObject({ code: grpcStatus.UNAUTHENTICATED });
    metadata.set("authorization", "Bearer not-a-token");
    expect(await rawGetJob(metadata)).toMatchObject({ code: grpcStatus.UNAUTHENTICATED });
    expect(seen.handled).toBe(handled);
  });

  it("takes the tenant from the token only: bare x-rb-org-id next to a valid service token is ignored", async () => {
    const metadata = new Metadata();
    metadata.set("x-rb-org-id", "org_victim");
    metadata.set("x-rb-user-id", "usr_attacker");
    metadata.set("x-rb-plan", "pro");
    metadata.set("authorization", `Bearer ${await devServiceIdentity("gateway").tokenFor("jobs", "/renderbus.jobs.v1.Jobs/GetJob")}`);
    expect(await rawGetJob(metadata)).toMatchObject({ code: grpcStatus.UNAUTHENTICATED });
  });

  it("refuses a token signed for another service (audience) with UNAUTHENTICATED", async () => {
    const metadata = new Metadata();
    metadata.set("authorization", `Bearer ${await devServiceIdentity("gateway").tokenFor("auth", "/renderbus.jobs.v1.Jobs/GetJob", AUTH)}`);
    expect(await rawGetJob(metadata)).toMatchObject({ code: grpcStatus.UNAUTHENTICATED });
  });

  it("answers PERMISSION_DENIED when a valid caller is not one the method accepts, and runs the method for one it accepts", async () => {
    const handled = seen.handled;
    const worker = createRpcClient(jobs.JobsClient, address, devServiceIdentity("worker"));
    try {
      await expect(worker.getJob({ jobId: "job_1" }, { auth: AUTH })).rejects.toMatchObject({ code: "FORBIDDEN" });
      await expect(client.startJob({ jobId: "job_1", workerId: "w" })).rejects.toMatchObject({ code: "FORBIDDEN" });
      expect(seen.handled).toBe(handled);
      await expect(worker.startJob({ jobId: "job_1", workerId: "w" })).resolves.toMatchObject({ job: { id: "job_1" } });
      expect(seen.handled).toBe(handled + 1);
    } finally {
      worker.close();
    }
  });

  it("will not serve a service that belongs to another process or has no caller rules", () => {
    expect(() => createRpcServer(devServiceIdentity("auth")).add(jobs.JobsService, fakeJobs)).toThrow(/served by jobs/);
  });
});

describe("health service", () => {
  it("reports SERVING after listen, for the server and for each added service", async () => {
    expect(await checkHealth(address)).toBe("SERVING");
    expect(await checkHealth(address, SERVICE_NAME)).toBe("SERVING");
    expect(await isRpcServing(address)).toBe(true);
  });

  it("reports NOT_SERVING before listen", async () => {
    // Bound but not through listen(): the health service is up and must not claim readiness yet.
    const unready = createRpcServer(devServiceIdentity("jobs"));
    unready.add(jobs.JobsService, fakeJobs);
    const port = await new Promise<number>((resolve, reject) =>
      unready.server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
    try {
      expect(await checkHealth(`127.0.0.1:${port}`)).toBe("NOT_SERVING");
    } finally {
      unready.server.forceShutdown();
    }
  });

  it("reports NOT_SERVING to watchers during shutdown, while in-flight calls still finish", async () => {
    const draining = createRpcServer(devServiceIdentity("jobs"));
    draining.add(jobs.JobsService, fakeJobs);
    const port = await draining.listen(0);
    const drainingAddress = `127.0.0.1:${port}`;
    const drainingClient = createRpcClient(jobs.JobsClient, drainingAddress, devServiceIdentity("gateway"));

    const probe = healthProbe(drainingAddress);
    const watch = probe.watch("");
    const statuses: string[] = [];
    watch.on("data", (status: string) => statuses.push(status));
    watch.on("error", () => undefined); // cancelled below
    await until(() => statuses.includes("SERVING"));

    releaseSlowCall = undefined;
    const slowCall = drainingClient.getJob({ jobId: "slow" }, { auth: AUTH, deadlineMs: 10_000 });
    await until(() => releaseSlowCall !== undefined);

    const shutdown = draining.shutdown(5000);
    await until(() => statuses.includes("NOT_SERVING"));
    expect(statuses).toEqual(["SERVING", "NOT_SERVING"]);
    expect(await isRpcServing(drainingAddress, 500)).toBe(false);

    watch.cancel();
    releaseSlowCall!();
    await expect(slowCall).resolves.toMatchObject({ id: "slow" });
    await shutdown;
    probe.close();
    drainingClient.close();
  });
});

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
