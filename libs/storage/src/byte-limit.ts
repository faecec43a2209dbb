import { Transform } from "node:stream";
import { ObjectTooLargeError } from "./object-store.js";

/** A pass-through that counts bytes and fails with {@link ObjectTooLargeError} past `maxBytes` (if given). */
export function countingLimit(maxBytes: number | undefined): Transform & { readonly bytes: number } {
  let bytes = 0;
  const transform = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      if (maxBytes !== undefined && bytes > maxBytes) callback(new ObjectTooLargeError(maxBytes));
      else callback(null, chunk);
    },
  });
  return Object.defineProperty(transform, "bytes", { get: () => bytes }) as Transform & { readonly bytes: number };
}
