import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";

const script = join(import.meta.dirname, "node24.mjs");
const onNode24 = process.versions.node.startsWith("24.");

describe("node scripts/node24.mjs", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Runs the script with a stand-in for npm (the registry is outside our system) into an empty cache folder; `npm`
   * gets the cache folder's path and returns the shell lines of its body. Returns stdout and the cache folder.
   */
  function runWithNpm(npm: (cache: string) => string) {
    const dir = mkdtempSync(join(tmpdir(), "rb-node24-"));
    dirs.push(dir);
    const bin = join(dir, "bin");
    mkdirSync(bin);
    const cache = join(dir, "cache");
    writeFileSync(join(bin, "npm"), `#!/bin/sh\n${npm(cache)}`);
    chmodSync(join(bin, "npm"), 0o755);
    const stdout = execFileSync(process.execPath, [script], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH}`, RENDERBUS_NODE24_DIR: cache },
    });
    return { stdout, installed: join(cache, "node_modules", "node", "bin", "node") };
  }

  /** What the node package's preinstall does: places a "node" that answers --version as Node 24. */
  const placeNode24 = (cache: string) =>
    `mkdir -p "${cache}/node_modules/node/bin"\nprintf '#!/bin/sh\\necho v24.99.0\\n' > "${cache}/node_modules/node/bin/node"\nchmod +x "${cache}/node_modules/node/bin/node"\n`;

  it("prints the binary's path alone on stdout, also when it installs it (npm's report goes to stderr)", () => {
    // npm reports on stdout.
    const { stdout, installed } = runWithNpm((cache) => `${placeNode24(cache)}echo "added 2 packages in 8s"\n`);
    // On Node 24 itself the script prints this node and installs nothing.
    expect(stdout).toBe(`${onNode24 ? process.execPath : installed}\n`);
  });

  it.skipIf(onNode24)("allows the package's preinstall in the cache folder's manifest (npm 12 skips scripts no allowScripts covers)", () => {
    // As npm 12: without `allowScripts: {node: true}` in the prefix's package.json the preinstall does not run.
    const { stdout, installed } = runWithNpm(
      (cache) =>
        `node -e 'const m = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); process.exit(m.allowScripts?.node === true ? 0 : 1)' "${cache}/package.json" || exit 0\n${placeNode24(cache)}`,
    );
    expect(stdout).toBe(`${installed}\n`);
  });
});
