import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import module from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain ES module script without types
import { launcherSource, NODE_BUNDLE } from "./build-services.mjs";

const run = promisify(execFile);

/**
 * A service in miniature: TypeScript bundled as the services are, next to a package in node_modules that ships a
 * source map, run through the launcher the build writes as dist/main.mjs.
 */
async function launchedFixture(): Promise<{ stdout: string; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), "rb-launcher-"));
  const pkg = join(dir, "node_modules", "mapped-package");
  mkdirSync(pkg, { recursive: true });
  writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "mapped-package", type: "module", main: "index.js" }));
  writeFileSync(join(pkg, "index.js"), "export const answer = 42;\n//# sourceMappingURL=index.js.map\n");
  writeFileSync(join(pkg, "index.js.map"), JSON.stringify({ version: 3, sources: ["index.ts"], names: [], mappings: "AAAA" }));
  writeFileSync(
    join(dir, "service.ts"),
    [
      'import { answer } from "mapped-package";',
      'import module from "node:module";',
      "function failsHere(): never {",
      '  throw new Error("boom " + String(answer));',
      "}",
      "const support = (module as { getSourceMapsSupport?: () => unknown }).getSourceMapsSupport?.();",
      "console.log(JSON.stringify(support ?? null));",
      "failsHere();",
      "",
    ].join("\n"),
  );
  await build({ ...NODE_BUNDLE, absWorkingDir: dir, entryPoints: [join(dir, "service.ts")], outfile: join(dir, "dist", "service.mjs"), external: ["mapped-package"] });
  writeFileSync(join(dir, "dist", "main.mjs"), launcherSource("service.mjs"));
  // The package resolves from dist/ as a service's do from the checkout's node_modules.
  mkdirSync(join(dir, "dist", "node_modules"), { recursive: true });
  writeFileSync(join(dir, "dist", "package.json"), JSON.stringify({ type: "module" }));
  await run("ln", ["-s", pkg, join(dir, "dist", "node_modules", "mapped-package")]);
  try {
    await run(process.execPath, [join(dir, "dist", "main.mjs")]);
  } catch (error) {
    const { stdout, stderr } = error as { stdout: string; stderr: string };
    return { stdout, stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  throw new Error("the fixture should have thrown");
}

describe("the launcher each service's bundle runs through (dist/main.mjs)", () => {
  it("maps stack traces to the TypeScript source without --enable-source-maps", async () => {
    const { stderr } = await launchedFixture();
    expect(stderr).toContain("boom 42");
    // The throwing line of service.ts, not of the bundle.
    expect(stderr).toMatch(/service\.ts:4:\d+/);
  });

  // Node 22.14+ (the image runs Node 24): the npm packages' source maps are neither parsed nor kept.
  it.runIf(typeof (module as { setSourceMapsSupport?: unknown }).setSourceMapsSupport === "function")(
    "leaves the source maps of npm packages alone where node can tell them apart",
    async () => {
      const { stdout } = await launchedFixture();
      expect(JSON.parse(stdout.trim())).toEqual({ enabled: true, nodeModules: false, generatedCode: false });
    },
  );
});
