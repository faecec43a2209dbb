import { readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "..");
const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { dependencies: Record<string, string>; exports: Record<string, unknown>; files: string[] };
const sources = (readdirSync(join(root, "src"), { recursive: true }) as string[]).filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts"));
const importsOf = (file: string) => [...readFileSync(join(root, "src", file), "utf8").matchAll(/(?:from|import\()\s*["']([^"']+)["']/g)].map((match) => match[1]!);

describe("the publishable package", () => {
  it("imports only Node built-ins, its declared dependencies and its own files at runtime", () => {
    const allowed = new Set(Object.keys(manifest.dependencies));
    for (const file of sources) {
      for (const specifier of importsOf(file)) {
        if (specifier.startsWith(".")) {
          expect(resolve(join(root, "src", file), "..", specifier).startsWith(join(root, "src")), `${file} imports ${specifier}`).toBe(true);
          continue;
        }
        const name = specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]!;
        const builtin = specifier.startsWith("node:") || builtinModules.includes(name);
        expect(builtin || allowed.has(name), `${file} imports ${specifier}`).toBe(true);
      }
    }
  });

  it("ships the built entry points, their types, the CLI and the README", () => {
    expect(manifest.exports["."]).toEqual({ types: "./dist/index.d.ts", import: "./dist/index.js" });
    expect(manifest.files).toEqual(["dist", "bin", "README.md"]);
  });
});
