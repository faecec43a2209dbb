import { monotonicFactory } from "ulidx";

/** Id prefixes of SPEC section 1. */
export const ID_PREFIXES = ["job", "batch", "key", "org", "usr", "del", "evt", "led", "att"] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

/** A prefixed id: the prefix is part of the type so a JobId cannot be passed where an OrgId is expected. */
export type Id<P extends IdPrefix> = `${P}_${string}`;
export type JobId = Id<"job">;
export type BatchId = Id<"batch">;
export type ApiKeyId = Id<"key">;
export type OrgId = Id<"org">;
export type UserId = Id<"usr">;
export type DeliveryId = Id<"del">;
export type EventId = Id<"evt">;

// Monotonic within a process so ids minted in the same millisecond still sort in creation order.
const ulid = monotonicFactory();

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
