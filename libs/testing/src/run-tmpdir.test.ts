import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { statSync } from "node:fs";
import { basename, dirname } from "node:path";
import { keptLogPath } from "./run-tmpdir.js";

describe("the test run's temporary directory", () => {
  it("is every test process's TMPDIR, a directory of its own that the global teardown removes", () => {
    const runTmp = tmpdir();
    expect(basename(runTmp)).toMatch(/^renderbus-test-run-/);
    expect(statSync(runTmp).mode & 0o7777).toBe(0o1777); // as /tmp: other users write there too
    // Logs kept for a post-mortem go beside it, where the teardown does not remove them.
    expect(keptLogPath("x.log")).toBe(`${dirname(runTmp)}/x.log`);
  });
});
