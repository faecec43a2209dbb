import { describe, expect, it } from "vitest";
import { exceedsJsonDepth, MAX_JSON_DEPTH } from "./json-depth.js";

const nestedArrays = (depth: number) => `${"[".repeat(depth)}1${"]".repeat(depth)}`;
const nestedObjects = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

describe("exceedsJsonDepth", () => {
  it.each([
    ["a scalar", "1", false],
    ["an empty object", "{}", false],
    ["a flat job spec", '{"type":"qr.generate","params":{"content":"x"},"metadata":{"a":[1,2,{"b":null}]}}', false],
    [`${MAX_JSON_DEPTH} nested arrays`, nestedArrays(MAX_JSON_DEPTH), false],
    [`${MAX_JSON_DEPTH + 1} nested arrays`, nestedArrays(MAX_JSON_DEPTH + 1), true],
    [`${MAX_JSON_DEPTH} nested objects`, nestedObjects(MAX_JSON_DEPTH), false],
    [`${MAX_JSON_DEPTH + 1} nested objects`, nestedObjects(MAX_JSON_DEPTH + 1), true],
    ["arrays and objects mixed past the limit", `{"m":${"[{\"a\":".repeat(33)}1${"}]".repeat(33)}}`, true],
    ["many siblings, each shallow", `[${Array.from({ length: 10_000 }, () => "[[1]]").join(",")}]`, false],
    ["brackets inside a string", JSON.stringify({ text: "[".repeat(1000) + "{".repeat(1000) }), false],
    ["an escaped quote before brackets in a string", JSON.stringify({ text: `\\"${"[".repeat(1000)}` }), false],
    ["an escaped backslash ending a string, then real nesting", `["\\\\",${nestedArrays(MAX_JSON_DEPTH)}]`, true],
    ["150,000 nested arrays in metadata (the audit's body)", `{"type":"qr.generate","metadata":{"m":${nestedArrays(150_000)}}}`, true],
  ])("%s: %s", (_name, text, exceeds) => {
    expect(exceedsJsonDepth(text)).toBe(exceeds);
  });

  it("counts depth as JSON.parse would see it: every text it accepts parses, and nesting is what it measured", () => {
    for (const depth of [1, 10, MAX_JSON_DEPTH]) {
      const text = nestedObjects(depth);
      expect(exceedsJsonDepth(text, depth)).toBe(false);
      expect(exceedsJsonDepth(text, depth - 1)).toBe(true);
      expect(() => JSON.parse(text) as unknown).not.toThrow();
    }
  });

  it("scans a 1 MB body in well under a millisecond per 100 KB", () => {
    const text = JSON.stringify({ metadata: { blob: "x".repeat(1024 * 1024) } });
    const started = performance.now();
    for (let run = 0; run < 10; run++) exceedsJsonDepth(text);
    expect((performance.now() - started) / 10).toBeLessThan(50);
  });
});
