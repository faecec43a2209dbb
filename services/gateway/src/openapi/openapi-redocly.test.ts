import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { buildOpenApiDocument } from "./openapi-document.js";

const repoRoot = resolve(import.meta.dirname, "../../../..");
const redocly = join(repoRoot, "node_modules", ".bin", "redocly");

interface LintProblem {
  ruleId: string;
  severity: "error" | "warn";
  message: string;
  location: { pointer?: string }[];
}

/** Runs `redocly lint` with the checked-in redocly.yaml on a document and returns its problems (JSON output). */
async function redoclyLint(document: unknown): Promise<LintProblem[]> {
  const dir = mkdtempSync(join(tmpdir(), "rb-openapi-"));
  try {
    const file = join(dir, "openapi.json");
    writeFileSync(file, JSON.stringify(document, null, 2));
    const run = await promisify(execFile)(redocly, ["lint", file, "--config", join(repoRoot, "redocly.yaml"), "--format", "json"], {
      cwd: repoRoot,
      // No telemetry, no update check: the test makes no request outside this machine.
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", REDOCLY_SUPPRESS_NOTIFICATIONS: "true", CI: "true" },
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { stdout?: string; stderr?: string }) => {
      // A non-zero exit means errors were found; the JSON report is on stdout all the same.
      if (!error.stdout) throw error;
      return { stdout: error.stdout, stderr: error.stderr ?? "" };
    });
    return (JSON.parse(run.stdout) as { problems: LintProblem[] }).problems;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const readable = (problems: LintProblem[]) => problems.map((problem) => `${problem.severity} ${problem.ruleId}: ${problem.message} at ${problem.location[0]?.pointer ?? "?"}`);

describe("the OpenAPI document under Redocly's linter (recommended rules, redocly.yaml)", () => {
  it("has no errors and no warnings", async () => {
    const problems = await redoclyLint(buildOpenApiDocument("https://api.renderbus.example"));
    expect(readable(problems)).toEqual([]);
  }, 120_000);

  it("reports an operation whose path parameter is not declared, so the lint can fail", async () => {
    const document = buildOpenApiDocument("https://api.renderbus.example");
    const paths = document.paths as Record<string, Record<string, { parameters?: unknown[] }>>;
    paths["/jobs/{jobId}"]!.get!.parameters = [];
    const problems = await redoclyLint(document);
    expect(problems.filter((problem) => problem.severity === "error").map((problem) => problem.ruleId)).toContain("path-parameters-defined");
  }, 120_000);
});
