import { createCipheriv, randomBytes } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { createSecretBox } from "@renderbus/secret-box";
import { startAuthHarness, type AuthHarness } from "../testing/auth-harness.js";
import { runAdminCli } from "./cli.js";
import { setOrgWebhook } from "./index.js";

const oldKey = randomBytes(32);
const newKey = randomBytes(32);

/** A secret as rows written before keyrings hold it: `v1:<iv>:<tag>:<ciphertext>`, no kid, no AAD. */
function sealV1(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return ["v1", iv.toString("base64"), cipher.getAuthTag().toString("base64"), data.toString("base64")].join(":");
}

async function reencrypt(databaseUrl: string, keys: string) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runAdminCli(["secrets:reencrypt"], {
    env: { DATABASE_URL: databaseUrl, MODE: "test", SECRETS_ENCRYPTION_KEYS: keys },
    out: (line) => out.push(line),
    err: (line) => err.push(line),
  });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

const sealedOf = async (harness: AuthHarness, orgId: string) =>
  (await harness.store.db.selectFrom("orgs").select("webhook_secret_encrypted").where("id", "=", orgId).executeTakeFirstOrThrow()).webhook_secret_encrypted!;

describe("rotating the secrets key (npm run admin -- secrets:reencrypt)", () => {
  const harnesses: AuthHarness[] = [];
  afterAll(async () => {
    for (const harness of harnesses) await harness.stop();
  });

  it("re-encrypts every webhook secret with the new key; after the old key is removed GetWebhookTarget still decrypts them", async () => {
    // Before: one key in the single-key form, as existing deployments run.
    const before = await startAuthHarness("secretsrotation", { SECRETS_ENCRYPTION_KEY: oldKey.toString("base64") });
    harnesses.push(before);
    const databaseUrl = before.config.DATABASE_URL;
    const current = await before.seedOrg("pro", "current form");
    await setOrgWebhook(before.store, current.orgId, "https://hooks.example.com/current", "whsec_current");
    // A row written before this change: the v1 envelope.
    const legacy = await before.seedOrg("pro", "legacy form");
    await before.store.db
      .updateTable("orgs")
      .set({ webhook_url: "https://hooks.example.com/legacy", webhook_secret_encrypted: sealV1(oldKey, "whsec_legacy") })
      .where("id", "=", legacy.orgId)
      .execute();
    expect((await before.authClient.getWebhookTarget({ orgId: legacy.orgId })).secret).toBe("whsec_legacy");
    // With SECRETS_ACCEPT_V1=false the same row is refused: the service reads the switch.
    const strict = await startAuthHarness("secretsstrict", { DATABASE_URL: databaseUrl, SECRETS_ENCRYPTION_KEY: oldKey.toString("base64"), SECRETS_ACCEPT_V1: "false" });
    harnesses.push(strict);
    // Said, not thrown: the dispatcher fails the org's deliveries unsent instead of asking again for ever.
    expect(await strict.authClient.getWebhookTarget({ orgId: legacy.orgId })).toEqual({ orgId: legacy.orgId, plan: "pro", url: "https://hooks.example.com/legacy", secret: undefined, secretUnreadable: true });
    expect((await strict.authClient.getWebhookTarget({ orgId: current.orgId })).secret).toBe("whsec_current");
    const sealedBefore = await sealedOf(before, current.orgId);
    expect(sealedBefore).toMatch(/^v2:default:/);
    // Without the rotation, dropping the old key would lose the secrets: the test can tell.
    expect(() => createSecretBox([{ kid: "2026-11", key: newKey }]).open(sealedBefore, current.orgId)).toThrow();

    // Rotation step 2: new key first, old key (its kid is `default`) still listed; re-encrypt.
    const bothKeys = `2026-11:${newKey.toString("base64")},default:${oldKey.toString("base64")}`;
    const run = await reencrypt(databaseUrl, bothKeys);
    expect(run.err).toBe("");
    expect(run.code).toBe(0);
    expect(run.out).toContain("sealed with key 2026-11: 2 re-encrypted, 0 already current");
    expect(await sealedOf(before, current.orgId)).toMatch(/^v2:2026-11:/);
    expect(await sealedOf(before, legacy.orgId)).toMatch(/^v2:2026-11:/);
    expect(await sealedOf(before, current.orgId)).not.toContain("whsec_current");
    // Running it again finds nothing to do.
    expect((await reencrypt(databaseUrl, bothKeys)).out).toContain("0 re-encrypted, 2 already current");

    // Rotation step 3: the old key is gone; the service still opens every org's secret.
    const after = await startAuthHarness("secretsrotated", { DATABASE_URL: databaseUrl, SECRETS_ENCRYPTION_KEYS: `2026-11:${newKey.toString("base64")}` });
    harnesses.push(after);
    expect(await after.authClient.getWebhookTarget({ orgId: current.orgId })).toMatchObject({ url: "https://hooks.example.com/current", secret: "whsec_current" });
    expect(await after.authClient.getWebhookTarget({ orgId: legacy.orgId })).toMatchObject({ url: "https://hooks.example.com/legacy", secret: "whsec_legacy" });

    // Each secret is bound to its org: a ciphertext copied into another org's row does not open there.
    await after.store.db.updateTable("orgs").set({ webhook_secret_encrypted: await sealedOf(after, current.orgId) }).where("id", "=", legacy.orgId).execute();
    expect(await after.authClient.getWebhookTarget({ orgId: legacy.orgId })).toMatchObject({ secretUnreadable: true, secret: undefined });
  });

  it("fails naming the orgs whose secret no configured key opens, and changes nothing", async () => {
    const harness = await startAuthHarness("secretsunreadable", { SECRETS_ENCRYPTION_KEYS: `k1:${oldKey.toString("base64")}` });
    harnesses.push(harness);
    const org = await harness.seedOrg("pro");
    await setOrgWebhook(harness.store, org.orgId, "https://hooks.example.com/x", "whsec_x");
    const sealed = await sealedOf(harness, org.orgId);
    const run = await reencrypt(harness.config.DATABASE_URL, `k2:${newKey.toString("base64")}`);
    expect(run.code).toBe(1);
    expect(run.err).toContain(`no configured key opens the secret of ${org.orgId}`);
    expect(await sealedOf(harness, org.orgId)).toBe(sealed);
  });
});
