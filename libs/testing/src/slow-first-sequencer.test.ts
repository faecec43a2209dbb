import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { SLOW_TEST_FILES, slowFirst } from "./slow-first-sequencer.js";

const repoRoot = resolve(import.meta.dirname, "..", "..", "..");

describe("slowFirst (the order test files start in)", () => {
  it("starts the slow files first, slowest first, and keeps the others in their order", () => {
    const files = ["/repo/libs/a.test.ts", `/repo/${SLOW_TEST_FILES[2]}`, "/repo/e2e/b.e2e.test.ts", `/repo/${SLOW_TEST_FILES[0]}`, "/repo/c.test.ts"];
    expect(slowFirst(files, (file) => file)).toEqual([`/repo/${SLOW_TEST_FILES[0]}`, `/repo/${SLOW_TEST_FILES[2]}`, "/repo/libs/a.test.ts", "/repo/e2e/b.e2e.test.ts", "/repo/c.test.ts"]);
  });

  it("matches whole path segments only", () => {
    const lookalike = `/repo/other-${SLOW_TEST_FILES[0]}`;
    expect(slowFirst(["/repo/x.test.ts", lookalike], (file) => file)).toEqual(["/repo/x.test.ts", lookalike]);
  });

  it("names files that exist (a renamed slow file would silently start last again)", () => {
    for (const file of SLOW_TEST_FILES) expect(existsSync(join(repoRoot, file)), file).toBe(true);
  });
});
