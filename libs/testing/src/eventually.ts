/**
 * Reads `read()` until `accept` holds for its value or `timeoutMs` passes, and returns the last value read either
 * way: the test's own `expect` on it then shows what was seen instead of a bare timeout.
 */
export async function eventually<T>(read: () => Promise<T>, accept: (value: T) => boolean, { timeoutMs = 10_000, intervalMs = 20 } = {}): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
