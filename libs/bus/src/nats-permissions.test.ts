import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ANY_NAMESPACE, NATS_USERS, natsPermissions, type NatsUser } from "./nats-permissions.js";
import { DISPATCH_DURABLE, STREAMS } from "./streams.js";

/** NATS subject matching: `*` is one token, `>` the rest. */
function matches(pattern: string, subject: string): boolean {
  const patternTokens = pattern.split(".");
  const subjectTokens = subject.split(".");
  for (let index = 0; index < patternTokens.length; index++) {
    if (patternTokens[index] === ">") return subjectTokens.length > index;
    if (index >= subjectTokens.length) return false;
    if (patternTokens[index] !== "*" && patternTokens[index] !== subjectTokens[index]) return false;
  }
  return patternTokens.length === subjectTokens.length;
}

const mayPublish = (user: NatsUser, subject: string, namespaces?: string[]) => natsPermissions(user, namespaces).publish.some((pattern) => matches(pattern, subject));
const maySubscribe = (user: NatsUser, subject: string, namespaces?: string[]) => natsPermissions(user, namespaces).subscribe.some((pattern) => matches(pattern, subject));

/** Reads `subject`: a core subscription, or pulling from a durable it may create on the stream that holds it. */
function mayRead(user: NatsUser, subject: string): boolean {
  if (maySubscribe(user, subject)) return true;
  const stream = Object.values(STREAMS).find((spec) => spec.subjects.some((pattern) => matches(pattern, subject)));
  return (
    stream !== undefined &&
    mayPublish(user, `$JS.API.CONSUMER.MSG.NEXT.${stream.name}.any-durable`) &&
    mayPublish(user, `$JS.API.CONSUMER.CREATE.${stream.name}.any-durable.${subject}`)
  );
}

describe("the NATS permission matrix", () => {
  it("lets the jobs service create durables on the auth events filtered on org changes only", () => {
    expect(mayPublish("jobs", "$JS.API.CONSUMER.CREATE.AUTH_EVENTS.jobs-org-plans.auth.events.org.updated")).toBe(true);
    expect(mayPublish("jobs", "$JS.API.CONSUMER.CREATE.AUTH_EVENTS.jobs-org-plans.auth.events.api_key.revoked")).toBe(false);
    expect(mayPublish("jobs", "$JS.API.CONSUMER.CREATE.AUTH_EVENTS.jobs-org-plans")).toBe(false);
    expect(mayPublish("jobs", "$JS.API.CONSUMER.CREATE.AUTH_EVENTS.jobs-org-plans.auth.events.>")).toBe(false);
    expect(mayPublish("jobs", "$JS.API.CONSUMER.DURABLE.CREATE.AUTH_EVENTS.jobs-org-plans")).toBe(false);
  });

  it("lets the jobs service read the info of the workers' dispatch durable, and take nothing from it", () => {
    expect(mayPublish("jobs", `$JS.API.CONSUMER.INFO.JOBS_DISPATCH.${DISPATCH_DURABLE}`)).toBe(true);
    expect(mayPublish("jobs", "$JS.API.CONSUMER.INFO.JOBS_DISPATCH.other")).toBe(false);
    expect(mayPublish("jobs", `$JS.API.CONSUMER.MSG.NEXT.JOBS_DISPATCH.${DISPATCH_DURABLE}`)).toBe(false);
    expect(mayPublish("jobs", `$JS.API.CONSUMER.CREATE.JOBS_DISPATCH.${DISPATCH_DURABLE}.jobs.dispatch.>`)).toBe(false);
    expect(mayPublish("jobs", `$JS.API.CONSUMER.DELETE.JOBS_DISPATCH.${DISPATCH_DURABLE}`)).toBe(false);
    expect(mayPublish("jobs", "$JS.ACK.JOBS_DISPATCH.workers.1.1.1.1.1")).toBe(false);
    expect(mayPublish("jobs", `$JS.API.CONSUMER.INFO.t_files1_JOBS_DISPATCH.${DISPATCH_DURABLE}`, ANY_NAMESPACE)).toBe(true);
  });

  it("matches docs/events.md: who may publish and who may read each subject", () => {
    const events = readFileSync(join(resolve(import.meta.dirname, "..", "..", ".."), "docs", "events.md"), "utf8");
    const rows = [...events.matchAll(/^\| `([a-z_.]+)` \| [^|]+ \| ([^|]+) \| ([^|]+) \|/gm)];
    expect(rows.length).toBeGreaterThan(8);
    const list = (cell: string) => cell.split(",").map((user) => user.trim()).sort();
    for (const [, subject, publishers, readers] of rows) {
      expect(NATS_USERS.filter((user) => mayPublish(user, subject!)).sort(), `may publish ${subject}`).toEqual(list(publishers!));
      expect(NATS_USERS.filter((user) => mayRead(user, subject!)).sort(), `may read ${subject}`).toEqual(list(readers!));
    }
  });

  it("lets nobody delete a stream or read JetStream advisories", () => {
    for (const user of NATS_USERS) {
      expect(mayPublish(user, "$JS.API.STREAM.DELETE.JOBS_EVENTS", ANY_NAMESPACE), user).toBe(false);
      expect(maySubscribe(user, "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.JOBS_EVENTS.x", ANY_NAMESPACE), user).toBe(false);
    }
  });

  it("gives the gateway and the example subscriber no stream administration", () => {
    for (const user of ["gateway", "job-subscriber"] as const) {
      for (const action of ["CREATE", "UPDATE", "PURGE"]) expect(mayPublish(user, `$JS.API.STREAM.${action}.JOBS_EVENTS`, ANY_NAMESPACE), `${user} ${action}`).toBe(false);
    }
    expect(natsPermissions("gateway").publish.filter((subject) => subject.startsWith("$JS.API.") && subject !== "$JS.API.INFO")).toEqual([]);
  });

  it("keeps each user to its own inbox", () => {
    for (const user of NATS_USERS) {
      expect(maySubscribe(user, `_INBOX_${user}.abc.1`)).toBe(true);
      expect(maySubscribe(user, "_INBOX.abc.1"), user).toBe(false);
      for (const other of NATS_USERS.filter((each) => each !== user)) expect(maySubscribe(user, `_INBOX_${other}.abc.1`), `${user} -> ${other}`).toBe(false);
    }
  });

  it("covers a test namespace's subjects the way it covers production's", () => {
    expect(mayPublish("jobs", "t_files1.jobs.events.job.completed", ANY_NAMESPACE)).toBe(true);
    expect(mayPublish("worker", "t_files1.jobs.events.job.completed", ANY_NAMESPACE)).toBe(false);
    expect(maySubscribe("worker", "t_files1.auth.events.api_key.revoked", ANY_NAMESPACE)).toBe(false);
    expect(maySubscribe("worker", "t_files1.jobs.events.job.cancelled", ANY_NAMESPACE)).toBe(true);
    // Production permissions know no namespace.
    expect(mayPublish("jobs", "t_files1.jobs.events.job.completed")).toBe(false);
  });
});
