import type { Browser } from "playwright-core";
import { createTestDatabase, startMailbox, startSystem, testInfra, testNamespace, type Mailbox, type RunningSystem } from "@renderbus/testing";
import { repoRoot } from "../helpers.js";
import { ensureDashboardBuilt, launchChromium } from "./browser.js";

/** A whole system of its own (database, namespace), Chromium, and a mail server when asked for. */
export interface DashboardRig {
  system: RunningSystem;
  browser: Browser;
  /** Set with `{ mail: true }`: the system's SMTP_URL, so sign-ups confirm their address (EMAIL_VERIFICATION=required). */
  mailbox: Mailbox | undefined;
  stop(): Promise<void>;
}

/** Starts a dashboard test file's rig; `label` names its database and NATS namespace. */
export async function startDashboardRig(label: string, { mail = false }: { mail?: boolean } = {}): Promise<DashboardRig> {
  const infra = testInfra();
  const [mailbox] = await Promise.all([mail ? startMailbox() : Promise.resolve(undefined), ensureDashboardBuilt()]);
  const system = await startSystem({
    repoRoot,
    databaseUrl: await createTestDatabase(label),
    natsUrl: infra.natsUrl,
    redisUrl: infra.redisUrl,
    namespace: testNamespace(label),
    env: { MODE: "test", ...(mailbox ? { SMTP_URL: mailbox.url } : {}) },
  });
  const browser = await launchChromium();
  return {
    system,
    browser,
    mailbox,
    async stop() {
      await browser.close();
      await system.stop();
      await mailbox?.close();
    },
  };
}
