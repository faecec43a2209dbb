import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { RUN_TMPDIR_VARIABLE } from "./global-setup.js";

describe("the test run's temporary directory", () => {
  it("is every test process's TMPDIR, a directory of its own that the global teardown removes", () => {
    const runTmp = process.env[RUN_TMPDIR_VARIABLE];
    expect(runTmp).toMatch(/renderbus-test-run-/);
    expect(tmpdir()).toBe(runTmp);
  });
});
