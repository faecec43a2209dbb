import type { AuthResources } from "../auth-resources.js";

/** What `secrets:reencrypt` did. */
export interface ReencryptOutcome {
  /** The kid every stored secret is now sealed with. */
  kid: string;
  reencrypted: number;
  /** Already sealed with the newest key in the current envelope. */
  alreadyCurrent: number;
  /** Changed by someone else between our read and our write (the service sealed a new secret): run again. */
  changedMeanwhile: number;
  /** Orgs whose secret no configured key opens: the key that sealed it is missing from SECRETS_ENCRYPTION_KEYS. */
  unreadable: string[];
}

/**
 * Re-encrypts every stored webhook secret with the newest key of the keyring (and into the v2 envelope bound to its
 * org), so the older keys can be removed afterwards. Each row is rewritten only if it still holds the value read, so a
 * secret set meanwhile is never overwritten; the plaintext does not change, so nothing needs announcing.
 */
export async function reencryptSecrets(store: AuthResources): Promise<ReencryptOutcome> {
  const { secretBox } = store;
  const outcome: ReencryptOutcome = { kid: secretBox.currentKid, reencrypted: 0, alreadyCurrent: 0, changedMeanwhile: 0, unreadable: [] };
  const rows = await store.db.selectFrom("orgs").select(["id", "webhook_secret_encrypted"]).where("webhook_secret_encrypted", "is not", null).orderBy("id").execute();
  for (const { id, webhook_secret_encrypted: sealed } of rows) {
    if (sealed === null) continue;
    if (secretBox.isCurrent(sealed)) {
      outcome.alreadyCurrent += 1;
      continue;
    }
    let plaintext: string;
    try {
      plaintext = secretBox.open(sealed, id);
    } catch {
      outcome.unreadable.push(id);
      continue;
    }
    const updated = await store.db
      .updateTable("orgs")
      .set({ webhook_secret_encrypted: secretBox.seal(plaintext, id) })
      .where("id", "=", id)
      .where("webhook_secret_encrypted", "=", sealed)
      .executeTakeFirst();
    if (updated.numUpdatedRows > 0n) outcome.reencrypted += 1;
    else outcome.changedMeanwhile += 1;
  }
  return outcome;
}
