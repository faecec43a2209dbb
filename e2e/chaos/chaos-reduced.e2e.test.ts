import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testInfra } from "@renderbus/testing";
import { faultTable, killService, restartNats, startChaosRig, type ChaosRig, type FaultOutcome } from "./chaos-rig.js";

/**
 * The CI-sized fault suite: under a steady load of jobs with webhooks, kill -9 the worker, kill -9 the webhook
 * dispatcher, restart NATS; after each, nothing accepted is lost, doubled or left unpaid. The full suite (every
 * service, PostgreSQL, a receiver outage, a NATS cluster node) is `npm run test:chaos`.
 */
describe("chaos (reduced): faults under load lose nothing", () => {
  let rig: ChaosRig;
  const outcomes: FaultOutcome[] = [];

  beforeAll(async () => {
    rig = await startChaosRig({ redisUrl: testInfra().redisUrl, log: (line) => console.log(line) });
  }, 180_000);

  afterAll(async () => {
    if (outcomes.length > 0) console.log(`faults survived:\n${faultTable(outcomes)}`);
    await rig?.stop();
  }, 60_000);

  for (const fault of [killService("worker"), killService("webhook-dispatcher"), restartNats]) {
    it(`survives ${fault.name}: every accepted job terminal, events once, deliveries succeeded, batches completed once, ledger balanced`, async () => {
      const outcome = await rig.run(fault);
      outcomes.push(outcome);
      expect(outcome.jobs).toBeGreaterThan(0);
      expect(outcome.problems).toEqual([]);
    }, 600_000);
  }
});
