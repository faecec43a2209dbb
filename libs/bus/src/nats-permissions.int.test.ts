import { randomBytes } from "node:crypto";
import { connect } from "@nats-io/transport-node";
import { PermissionViolationError, type NatsConnection, type Status } from "@nats-io/nats-core";
import { testInfra } from "@renderbus/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Bus } from "./bus.js";
import { splitNatsUrl } from "./nats-credentials.js";
import { devNatsPassword, natsInboxPrefix, type NatsUser } from "./nats-permissions.js";
import { STREAMS } from "./streams.js";

/**
 * Against the NATS server `npm test` starts (libs/testing/src/local-nats.ts, generated from nats-permissions.ts):
 * anonymous clients are refused, and each service's user is held to its subjects. Skipped when NATS_URL points the
 * run at a server without authentication.
 */
const { url: serverUrl, credentials: superuser } = splitNatsUrl(testInfra().natsUrl);
const namespace = `perm${randomBytes(4).toString("hex")}`;
const wire = (logical: string) => `${namespace}.${logical}`;

const connectAs = (user: NatsUser) =>
  connect({ servers: serverUrl, user, pass: devNatsPassword(user), inboxPrefix: natsInboxPrefix(user), reconnect: false, timeout: 5000 });

/** The next permission violation the server reports on `nc`, through the status iterator. */
async function nextPermissionViolation(nc: NatsConnection): Promise<PermissionViolationError> {
  for await (const status of nc.status() as AsyncIterable<Status>) {
    if (status.type === "error" && status.error instanceof PermissionViolationError) return status.error;
  }
  throw new Error("the connection closed without a permission violation");
}

describe.skipIf(!superuser)("NATS accounts and permissions", () => {
  let jobs: Bus;

  beforeAll(async () => {
    // The jobs service's own user declares the job streams, as it does at start-up.
    jobs = await Bus.connect({ url: serverUrl, name: "jobs-perm-test", namespace, credentials: { user: "jobs", password: devNatsPassword("jobs") } });
    await jobs.ensureStreams([STREAMS.jobEvents, STREAMS.jobDispatch, STREAMS.webhookEvents, STREAMS.authEvents]);
  });

  afterAll(async () => {
    await jobs?.close();
  });

  it("refuses a client without credentials", async () => {
    await expect(connect({ servers: serverUrl, reconnect: false, timeout: 5000 })).rejects.toThrow(/authorization/i);
  });

  it("refuses a wrong password", async () => {
    await expect(connect({ servers: serverUrl, user: "worker", pass: "not-the-password", reconnect: false, timeout: 5000 })).rejects.toThrow(/authorization/i);
  });

  it("refuses the worker publishing jobs.events.job.completed (no forged completions)", async () => {
    const nc = await connectAs("worker");
    try {
      const violation = nextPermissionViolation(nc);
      nc.publish(wire("jobs.events.job.completed"), JSON.stringify({ jobId: "job_forged", orgId: "org_victim" }));
      const error = await violation;
      expect(error.operation).toBe("publish");
      expect(error.subject).toBe(wire("jobs.events.job.completed"));
      // And nothing reached the stream.
      const info = await jobs.jsm.streams.info(jobs.streamName(STREAMS.jobEvents));
      expect(info.state.messages).toBe(0);
    } finally {
      await nc.close();
    }
  });

  it("refuses the worker subscribing to auth.events.>", async () => {
    const nc = await connectAs("worker");
    try {
      const violation = nextPermissionViolation(nc);
      const subscription = nc.subscribe(wire("auth.events.>"));
      const error = await violation;
      expect(error.operation).toBe("subscription");
      expect(error.subject).toBe(wire("auth.events.>"));
      // A refused subscription is closed with the error (terminal for it).
      await expect(subscription.closed).resolves.toBeInstanceOf(PermissionViolationError);
    } finally {
      await nc.close();
    }
  });

  it("lets the worker receive the cancel events it listens to", async () => {
    const nc = await connectAs("worker");
    try {
      const subscription = nc.subscribe(wire("jobs.events.job.cancelled"), { max: 1 });
      await nc.flush();
      await jobs.publish("jobs.events.job.cancelled", { jobId: "job_1" });
      for await (const message of subscription) expect(message.json()).toEqual({ jobId: "job_1" });
    } finally {
      await nc.close();
    }
  });

  it("refuses a client reading another user's replies (_INBOX of the jobs service)", async () => {
    const nc = await connectAs("gateway");
    try {
      const violation = nextPermissionViolation(nc);
      nc.subscribe(`${natsInboxPrefix("jobs")}.>`);
      expect((await violation).operation).toBe("subscription");
    } finally {
      await nc.close();
    }
  });

  it("refuses the gateway deleting a stream, and the stream stays", async () => {
    const gateway = await Bus.connect({ url: serverUrl, name: "gateway-perm-test", namespace, credentials: { user: "gateway", password: devNatsPassword("gateway") } });
    try {
      const stream = gateway.streamName(STREAMS.jobEvents);
      await expect(gateway.jsm.streams.delete(stream)).rejects.toThrow(/permission/i);
      await expect(jobs.jsm.streams.info(stream)).resolves.toMatchObject({ config: { name: stream } });
    } finally {
      await gateway.close();
    }
  });

  it("lets the jobs service read org changes from the auth events, and nothing else of that stream", async () => {
    const auth = await Bus.connect({ url: serverUrl, name: "auth-perm-test", namespace, credentials: { user: "auth", password: devNatsPassword("auth") } });
    try {
      await auth.publish("auth.events.org.updated", { orgId: "org_perm", plan: "pro", occurredAt: 1 });
      const seen: string[] = [];
      const handle = await jobs.consume<{ orgId: string }>({
        stream: STREAMS.authEvents,
        durable: "perm-test-org-plans",
        filterSubjects: ["auth.events.org.updated"],
        handler: async (message) => void seen.push(message.data.orgId),
      });
      const deadline = Date.now() + 10_000;
      while (!seen.includes("org_perm") && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      await handle.stop();
      expect(seen).toContain("org_perm");
      // That it may not read key revocations is the production matrix's (nats-permissions.test.ts, from docs/events.md):
      // this server's any-namespace rules widen stream rights to every stream, so it cannot show it.
    } finally {
      await auth.close();
    }
  });

  it("lets the example subscriber read job events but not publish them", async () => {
    const nc = await connectAs("job-subscriber");
    try {
      const violation = nextPermissionViolation(nc);
      nc.publish(wire("jobs.events.job.queued"), "{}");
      expect((await violation).operation).toBe("publish");
    } finally {
      await nc.close();
    }
    const subscriber = await Bus.connect({ url: serverUrl, name: "subscriber-perm-test", namespace, credentials: { user: "job-subscriber", password: devNatsPassword("job-subscriber") } });
    try {
      const seen: string[] = [];
      await jobs.publish("jobs.events.job.queued", { jobId: "job_2" });
      const handle = await subscriber.consume<{ jobId: string }>({
        stream: STREAMS.jobEvents,
        durable: "perm-test-subscriber",
        filterSubjects: ["jobs.events.job.queued"],
        handler: async (message) => void seen.push(message.data.jobId),
      });
      const deadline = Date.now() + 10_000;
      while (!seen.includes("job_2") && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      await handle.stop();
      expect(seen).toContain("job_2");
    } finally {
      await subscriber.close();
    }
  });
});
