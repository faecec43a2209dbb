import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { findExecutable, pathDirectories } from "./index.js";

const root = mkdtempSync(path.join(tmpdir(), "find-executable-"));
const first = mkdtempSync(path.join(root, "a-"));
const second = mkdtempSync(path.join(root, "b-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function file(dir: string, name: string, mode: number): string {
  const where = path.join(dir, name);
  writeFileSync(where, "#!/bin/sh\n");
  chmodSync(where, mode);
  return where;
}

describe("findExecutable", () => {
  it("returns the first executable of that name, in the order of the directories", () => {
    file(first, "tool", 0o755);
    const later = file(second, "tool", 0o755);
    expect(findExecutable("tool", [first, second])).toBe(path.join(first, "tool"));
    expect(findExecutable("tool", [second, first])).toBe(later);
  });

  it("passes over a file that is not executable, and answers undefined when nothing is found", () => {
    file(first, "plain", 0o644);
    const runnable = file(second, "plain", 0o755);
    expect(findExecutable("plain", [first, second])).toBe(runnable);
    expect(findExecutable("missing", [first, second])).toBeUndefined();
  });

  it("searches PATH by default", () => {
    expect(pathDirectories({ PATH: [first, "", second].join(path.delimiter) })).toEqual([first, second]);
    expect(findExecutable("sh")).toMatch(/\/sh$/);
  });
});
