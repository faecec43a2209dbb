import { describe, expect, it } from "vitest";
import { MAX_DEPTH, REDACTED, redactSecrets, SECRET_KEYS } from "./secret-redaction.js";

describe("redactSecrets", () => {
  it("replaces every secret key at the top level and below, in objects and arrays", () => {
    const fields = {
      url: "https://x.example/o?signature=1",
      inputs: [{ url: "https://bucket/in.mp4?X-Amz-Signature=2", name: "in.mp4" }, "plain"],
      a: { b: { c: { token: "deep" } } },
      res: { headers: { "set-cookie": ["rb_session=3"] } },
      route: "/outputs/*",
    };
    expect(redactSecrets(fields)).toEqual({
      url: REDACTED,
      inputs: [{ url: REDACTED, name: "in.mp4" }, "plain"],
      a: { b: { c: { token: REDACTED } } },
      res: { headers: { "set-cookie": REDACTED } },
      route: "/outputs/*",
    });
    for (const key of SECRET_KEYS) expect(redactSecrets({ [key]: 0 }), key).toEqual({ [key]: REDACTED });
  });

  it("changes nothing it was given: what it replaces it replaces in copies, and a line without secrets is returned as is", () => {
    const nested = { url: "https://x.example/?signature=1" };
    const list = [nested];
    const fields = { org: nested, list, jobId: "job_1" };
    const redacted = redactSecrets(fields);
    expect(redacted).not.toBe(fields);
    expect(fields).toEqual({ org: { url: "https://x.example/?signature=1" }, list: [{ url: "https://x.example/?signature=1" }], jobId: "job_1" });
    expect(redacted.list).not.toBe(list);
    const clean = { jobId: "job_1", nested: { status: 200 }, list: [1, 2] };
    expect(redactSecrets(clean)).toBe(clean);
  });

  it("keeps an error an error: prototype, message and stack, with its secret fields replaced", () => {
    const error = Object.assign(new TypeError("fetch failed"), { url: "https://x.example/?signature=1", code: "E_FETCH" });
    const redacted = redactSecrets({ err: error }).err;
    expect(redacted).toBeInstanceOf(TypeError);
    expect(redacted).toMatchObject({ message: "fetch failed", stack: error.stack, code: "E_FETCH", url: REDACTED });
    expect(error.url).toBe("https://x.example/?signature=1");
  });

  it("searches down to its depth bound and not into binary data", () => {
    let deep: Record<string, unknown> = { token: "t" };
    for (let level = 0; level < MAX_DEPTH; level++) deep = { next: deep };
    expect(JSON.stringify(redactSecrets(deep))).not.toContain('"t"');
    const bytes = Buffer.from("secret bytes");
    expect(redactSecrets({ body: bytes }).body).toBe(bytes);
    // A cycle ends at the depth bound rather than in a stack overflow.
    const cyclic: Record<string, unknown> = { name: "a" };
    cyclic.self = cyclic;
    expect(() => redactSecrets(cyclic)).not.toThrow();
  });
});
