import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const sdkRoot = resolve(import.meta.dirname, "..");
const repoRoot = resolve(sdkRoot, "..", "..");

/** The SDK as npm publishes it, unpacked: what a user's `npm install @renderbus/sdk` puts in node_modules. */
export interface PackedSdk {
  /** The unpacked package's folder. */
  root: string;
  /** Its CLI (the package.json `bin`). */
  bin: string;
  /** Every file the tarball holds, relative to the package's folder (npm's own list). */
  files: string[];
  remove(): void;
}

/**
 * `npm pack` (its prepack builds dist/ from the sources), unpacked into a temporary folder. The package's
 * dependencies resolve from the repository's node_modules (the registry is outside our system), so what runs is the
 * shipped files: the bin takes its dist/ path, as it does for users, since the tarball has no src/.
 */
export function packSdk(): PackedSdk {
  const dir = mkdtempSync(join(tmpdir(), "rb-sdk-pack-"));
  const [report] = JSON.parse(execFileSync("npm", ["pack", "--json", "--pack-destination", dir], { cwd: sdkRoot, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })) as { filename: string; files: { path: string }[] }[];
  execFileSync("tar", ["-xzf", join(dir, report!.filename), "-C", dir]);
  const root = join(dir, "package");
  symlinkSync(join(repoRoot, "node_modules"), join(dir, "node_modules"), "dir");
  return {
    root,
    bin: join(root, "bin", "renderbus.js"),
    files: report!.files.map((file) => file.path).sort(),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
