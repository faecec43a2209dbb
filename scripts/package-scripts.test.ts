import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const scripts = (JSON.parse(readFileSync(join(resolve(import.meta.dirname, ".."), "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;

describe("package.json scripts that handle Ctrl-C", () => {
  // tsx's CLI runs a script in a child process and SIGKILLs it when the child does not acknowledge a SIGINT within
  // about 60 ms; on a loaded machine npm start then died before stopping anything, leaving services and their
  // servers behind. `node --import tsx` runs the script in the process that receives the signal.
  it.each(["start", "test:chaos", "soak"])("runs %s in one process (node --import tsx), not under tsx's signal relay", (name) => {
    expect(scripts[name]).toMatch(/(^|&& )node --import tsx scripts\/\S+\.ts$/);
    expect(scripts[name]).not.toMatch(/(^|&& )tsx /);
  });
});
