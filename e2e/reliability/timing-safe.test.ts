import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { signatureOf, verifySignature } from "@renderbus/webhook-signing";
import { repoRoot } from "../helpers.js";

/** Production source files: libs, services, packages, examples (tests, generated contracts and builds excluded). */
function sourceFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      if (name === "node_modules" || name === "dist" || name === "build") continue;
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (/\.(ts|tsx|js|mjs)$/.test(name) && !/\.test\.tsx?$/.test(name) && !name.endsWith(".d.ts")) files.push(path);
    }
  };
  for (const group of ["libs", "services", "packages", "examples"]) {
    for (const workspace of readdirSync(join(repoRoot, group))) {
      if (workspace === "contracts") continue;
      const src = join(repoRoot, group, workspace, "src");
      try {
        if (statSync(src).isDirectory()) walk(src);
      } catch {
        // A workspace without src/.
      }
    }
  }
  return files;
}

/** Both sides of each `===` / `!==` / `==` / `!=` in a line of code. */
const COMPARISON = /([\w.$\][)]+)\s*[!=]==?\s*([\w.$\][(]+)/g;
/** The last name of a side (`existing.request_hash` -> `request_hash`) looks like a secret. */
const SECRET_NAME = /(signature|secret|token|password|hash|apikey|digest)s?$/i;
const CONSTANT = /^(undefined|null|true|false|\d+)$/;
const lastName = (side: string) => side.replace(/[()\][]/g, "").split(".").at(-1) ?? "";

/** Comparisons that look like secrets but are not, each with the reason. */
const NOT_SECRET: Record<string, string> = {
  "services/jobs/src/idempotency/idempotency-keys.ts": "request_hash is a hash of the request body, compared to detect key reuse; it guards nothing",
};

describe("timing-safe comparisons of keys and signatures", () => {
  const files = sourceFiles();

  it("finds the source tree", () => {
    expect(files.length).toBeGreaterThan(50);
  });

  it("compares no signature, secret, token, password or key hash with === or !== (use timingSafeEqual or a hash lookup)", () => {
    const offenders: string[] = [];
    for (const file of files) {
      const path = relative(repoRoot, file);
      if (path in NOT_SECRET) continue;
      readFileSync(file, "utf8")
        .split("\n")
        .forEach((line, index) => {
          const code = line.replace(/\/\/.*$/, "");
          for (const [, left, right] of code.matchAll(COMPARISON)) {
            // Against a constant (undefined, null, a number) a comparison reveals presence or length, not the secret.
            if ([left, right].some((side) => CONSTANT.test(side!))) continue;
            if (SECRET_NAME.test(lastName(left!)) || SECRET_NAME.test(lastName(right!))) offenders.push(`${path}:${index + 1}: ${line.trim()}`);
          }
        });
    }
    expect(offenders).toEqual([]);
  });

  it("uses crypto.timingSafeEqual in every module that verifies an HMAC", () => {
    const verifiers = files.filter((file) => {
      const text = readFileSync(file, "utf8");
      return /createHmac\(/.test(text) && /export (async )?function verify\w*/.test(text);
    });
    expect(verifiers.map((file) => relative(repoRoot, file)).sort()).toEqual(expect.arrayContaining(["libs/webhook-signing/src/index.ts", "libs/storage/src/signed-url.ts"]));
    for (const file of verifiers) expect(readFileSync(file, "utf8"), relative(repoRoot, file)).toMatch(/timingSafeEqual\(/);
  });

  it("stores and looks up API keys only by SHA-256 hash (the database compares digests, never the key)", () => {
    const apiKey = readFileSync(join(repoRoot, "services/auth/src/api-keys/api-key.ts"), "utf8");
    expect(apiKey).toMatch(/createHash\("sha256"\)/);
    const keyLookups = files.filter((file) => /key_hash/.test(readFileSync(file, "utf8")));
    expect(keyLookups.length).toBeGreaterThan(0);
    for (const file of keyLookups) expect(readFileSync(file, "utf8"), relative(repoRoot, file)).not.toMatch(/where\([^)]*"key"\s*,/);
  });

  it("verifies webhook signatures only for the exact bytes and secret (and rejects other lengths without throwing)", () => {
    const body = '{"event":"job.completed"}';
    const header = signatureOf(body, "whsec_one");
    expect(verifySignature(body, header, "whsec_one")).toBe(true);
    expect(verifySignature(body, header, "whsec_two")).toBe(false);
    expect(verifySignature(`${body} `, header, "whsec_one")).toBe(false);
    expect(verifySignature(body, `${header}00`, "whsec_one")).toBe(false);
    expect(verifySignature(body, "sha256=", "whsec_one")).toBe(false);
  });
});
