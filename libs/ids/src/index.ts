import { randomFillSync } from "node:crypto";
import { monotonicFactory } from "ulidx";

/** Id prefixes of the API's objects. */
export const ID_PREFIXES = ["job", "batch", "key", "org", "usr", "del", "evt", "led", "att", "ep", "upload"] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

/** A prefixed id: the prefix is part of the type, so an `Id<"job">` cannot be passed where an `Id<"org">` is expected. */
export type Id<P extends IdPrefix> = `${P}_${string}`;

const randomPool = Buffer.alloc(4096);
let randomOffset = randomPool.length;

/**
 * A uniform value in [0, 1) from a pool of cryptographically random bytes. ulidx's default draws one byte from the
 * crypto API per character (16 calls per id), a real cost for services that mint ids per event; the pool refills
 * once per 4,096 characters. 256 / 32 is whole, so each ULID character stays uniform.
 */
export function pooledRandom(): number {
  if (randomOffset >= randomPool.length) {
    randomFillSync(randomPool);
    randomOffset = 0;
  }
  return randomPool[randomOffset++]! / 256;
}

// Monotonic within a process so ids minted in the same millisecond still sort in creation order.
const ulid = monotonicFactory(pooledRandom);

/** A new id `<prefix>_<ULID>`: lexicographically sortable by creation time. */
export function newId<P extends IdPrefix>(prefix: P): Id<P> {
  return `${prefix}_${ulid()}`;
}

const ULID_PATTERN = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/** True when `value` is a well-formed id with this prefix; used to answer 404 early for malformed path ids. */
export function isId<P extends IdPrefix>(prefix: P, value: unknown): value is Id<P> {
  return typeof value === "string" && value.startsWith(`${prefix}_`) && ULID_PATTERN.test(value.slice(prefix.length + 1));
}

/** Epoch milliseconds encoded in an id's ULID part. */
export function timeOfId(id: string): number {
  const part = id.slice(id.indexOf("_") + 1, id.indexOf("_") + 11);
  const alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  let time = 0;
  for (const char of part) time = time * 32 + alphabet.indexOf(char);
  return time;
}
