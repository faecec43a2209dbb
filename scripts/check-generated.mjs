// Fails when libs/contracts is stale: regenerates from proto/ into a temp dir and compares byte for byte.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, statSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

const committed = "libs/contracts/src/generated";
const tmp = mkdtempSync(join(tmpdir(), "rb-proto-"));
const template = readFileSync("buf.gen.yaml", "utf8").replace(`out: ${committed}`, `out: ${tmp}`);
const templatePath = join(tmp, "buf.gen.yaml");
writeFileSync(templatePath, template);
execFileSync("npx", ["buf", "generate", "--template", templatePath], { stdio: "inherit" });

const list = (dir) =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? list(path) : [path];
  });
const fresh = list(tmp).filter((p) => p.endsWith(".ts")).map((p) => relative(tmp, p)).sort();
const current = list(committed).map((p) => relative(committed, p)).sort();
const stale = [
  ...fresh.filter((f) => !current.includes(f) || readFileSync(join(tmp, f), "utf8") !== readFileSync(join(committed, f), "utf8")),
  ...current.filter((f) => !fresh.includes(f)),
];
rmSync(tmp, { recursive: true, force: true });
if (stale.length > 0) {
  console.error(`Generated contracts are stale (${stale.join(", ")}). Run \`npm run proto\` and commit the result.`);
  process.exit(1);
}
console.log("contracts: generated code is up to date");
