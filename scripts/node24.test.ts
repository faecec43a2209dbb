import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";

const script = join(import.meta.dirname, "node24.mjs");

describe("node scripts/node24.mjs", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("prints the binary's path alone on stdout, also when it installs it (npm's report goes to stderr)", () => {
    const dir = mkdtempSync(join(tmpdir(), "rb-node24-"));
    dirs.push(dir);
    // A stand-in for npm (the registry is outside our system): it reports on stdout as npm does and installs a
    // "node" that answers --version as Node 24.
    const bin = join(dir, "bin");
    mkdirSync(bin);
    const cache = join(dir, "cache");
    writeFileSync(
      join(bin, "npm"),
      `#!/bin/sh\nmkdir -p "${cache}/node_modules/node/bin"\nprintf '#!/bin/sh\\necho v24.99.0\\n' > "${cache}/node_modules/node/bin/node"\nchmod +x "${cache}/node_modules/node/bin/node"\necho "added 2 packages in 8s"\n`,
    );
    chmodSync(join(bin, "npm"), 0o755);
    const stdout = execFileSync(process.execPath, [script], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH}`, RENDERBUS_NODE24_DIR: cache },
    });
    // On Node 24 itself the script prints this node and installs nothing.
    const expected = process.versions.node.startsWith("24.") ? process.execPath : join(cache, "node_modules", "node", "bin", "node");
    expect(stdout).toBe(`${expected}\n`);
  });

  it.skipIf(process.versions.node.startsWith("24."))("allows the package's preinstall in the cache folder's manifest (npm 12 skips scripts no allowScripts covers)", () => {
    const dir = mkdtempSync(join(tmpdir(), "rb-node24-"));
    dirs.push(dir);
    // A stand-in for npm 12: without `allowScripts: {node: true}` in the prefix's package.json the preinstall that
    // places the binary does not run, so no node is installed.
    const bin = join(dir, "bin");
    mkdirSync(bin);
    const cache = join(dir, "cache");
    writeFileSync(
      join(bin, "npm"),
      `#!/bin/sh
node -e 'const m = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); process.exit(m.allowScripts?.node === true ? 0 : 1)' "${cache}/package.json" || exit 0
mkdir -p "${cache}/node_modules/node/bin"
printf '#!/bin/sh\\necho v24.99.0\\n' > "${cache}/node_modules/node/bin/node"
chmod +x "${cache}/node_modules/node/bin/node"
`,
    );
    chmodSync(join(bin, "npm"), 0o755);
    const stdout = execFileSync(process.execPath, [script], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, PATH: `${bin}${delimiter}${process.env.PATH}`, RENDERBUS_NODE24_DIR: cache },
    });
    expect(stdout).toBe(`${join(cache, "node_modules", "node", "bin", "node")}\n`);
  });
});
