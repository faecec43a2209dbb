/**
 * Keys whose values never reach a log line, wherever they appear down to MAX_DEPTH levels (in objects, arrays and
 * errors alike). Secrets must never reach a log: this is the safety net, not the plan (code should not log these
 * objects at all). `url` is here because URLs carry credentials in their query (signed `/outputs` links, presigned
 * input URLs) and `signature` because it is one; a line that means a route pattern calls it `route`, a path without
 * query `path`.
 */
export const SECRET_KEYS: ReadonlySet<string> = new Set([
  "key",
  "apiKey",
  "secret",
  "webhookSecret",
  "password",
  "token",
  "authorization",
  "cookie",
  "set-cookie",
  "url",
  "signature",
]);

export const REDACTED = "[redacted]";

/** How deep a log object is searched: `{ a: { b: { c: { url } } } }` is the deepest `url` replaced. */
export const MAX_DEPTH = 4;

/**
 * `value` with every SECRET_KEYS entry replaced by "[redacted]", copied where something was replaced and never
 * changed in place (the caller's objects are left as they were). An error's copy keeps its prototype, message and
 * stack, so the logger's error serializer writes it as before. Binary data (Buffers, typed arrays) is not searched.
 *
 * Written here rather than with pino's `redact` option: pino 10's redactor (@pinojs/redact 0.4) parses every
 * wildcard path again for every property of every line, 9% of the gateway's CPU under load (bench/findings.md,
 * "Thirty-fourth round"), where one pass over the line's own keys costs a set lookup each.
 */
export function redactSecrets<T>(value: T, depth = 0): T {
  if (depth > MAX_DEPTH || value === null || typeof value !== "object" || ArrayBuffer.isView(value)) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let index = 0; index < value.length; index++) {
      const item: unknown = value[index];
      const redacted = redactSecrets(item, depth + 1);
      if (redacted !== item) (copy ??= value.slice())[index] = redacted;
    }
    return (copy ?? value) as T;
  }
  const source = value as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const key of Object.keys(source)) {
    const item = source[key];
    const redacted = SECRET_KEYS.has(key) && item !== undefined ? REDACTED : redactSecrets(item, depth + 1);
    if (redacted !== item) (copy ??= shallowCopy(source))[key] = redacted;
  }
  return (copy ?? value) as T;
}

/**
 * A plain object's own properties spread; anything else (an Error, a class instance) keeps its prototype and every own
 * property, each copied as a writable value: an accessor may read a slot only the original has (V8's `stack` of an
 * error on Node 24 is one), so its value is read from the original.
 */
function shallowCopy(source: Record<string, unknown>): Record<string, unknown> {
  const prototype = Object.getPrototypeOf(source) as object | null;
  if (prototype === Object.prototype || prototype === null) return { ...source };
  const copy = Object.create(prototype) as Record<string | symbol, unknown>;
  for (const key of Reflect.ownKeys(source)) {
    const { enumerable } = Object.getOwnPropertyDescriptor(source, key)!;
    Object.defineProperty(copy, key, { value: Reflect.get(source, key), writable: true, enumerable, configurable: true });
  }
  return copy;
}
