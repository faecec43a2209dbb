import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { webhookHeaders } from "./post-webhook.js";

/**
 * The receiver examples of docs/webhooks.md, run as written against deliveries signed by the dispatcher's own
 * request builder (the headers every attempt carries), for both schemes.
 */
const docs = readFileSync(resolve(import.meta.dirname, "../../../../docs/webhooks.md"), "utf8");
const blocks = [...docs.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map(([, language, code]) => ({ language: language!, code: code! }));
const block = (language: string, marker: string) => {
  const found = blocks.filter((candidate) => candidate.language === language && candidate.code.includes(marker));
  expect(found, `one ${language} block with ${marker} in docs/webhooks.md`).toHaveLength(1);
  return found[0]!.code;
};

const NEW_SECRET = `whsec_${Buffer.from("the new secret, 32 bytes long!!!").toString("base64")}`;
const OLD_SECRET = "a-plain-old-secret-ü";
const body = JSON.stringify({ event: "job.completed", jobId: "job_01", output: { url: "https://cdn.example.com/a.png" }, name: "café ✓" });

/** A delivery as the dispatcher sends it, with lower-case header names as a receiver's framework gives them. */
function signedDelivery(options: { secret: string; previousSecrets?: string[]; now?: number; body?: string }) {
  const headers = webhookHeaders(
    { url: "https://hooks.example.com/a", body: options.body ?? body, event: "job.completed", deliveryId: "del_01TEST", attempt: 1, secret: options.secret, previousSecrets: options.previousSecrets ?? [], brand: "Renderbus" },
    options.now ?? Date.now(),
  );
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}

interface Case {
  name: string;
  rawBody: string;
  headers: Record<string, string>;
  secrets: string[];
  valid: boolean;
}

const cases = (): Case[] => [
  { name: "whsec_ secret", rawBody: body, headers: signedDelivery({ secret: NEW_SECRET }), secrets: [NEW_SECRET], valid: true },
  { name: "plain secret", rawBody: body, headers: signedDelivery({ secret: OLD_SECRET }), secrets: [OLD_SECRET], valid: true },
  { name: "rotation: the old secret still verifies", rawBody: body, headers: signedDelivery({ secret: NEW_SECRET, previousSecrets: [OLD_SECRET] }), secrets: [OLD_SECRET], valid: true },
  { name: "rotation: the receiver knows both", rawBody: body, headers: signedDelivery({ secret: NEW_SECRET, previousSecrets: [OLD_SECRET] }), secrets: [NEW_SECRET, OLD_SECRET], valid: true },
  { name: "another secret", rawBody: body, headers: signedDelivery({ secret: NEW_SECRET }), secrets: ["whsec_b3RoZXI="], valid: false },
  { name: "tampered body", rawBody: body.replace("job_01", "job_02"), headers: signedDelivery({ secret: NEW_SECRET }), secrets: [NEW_SECRET], valid: false },
  { name: "re-serialised body", rawBody: JSON.stringify(JSON.parse(body), null, 1), headers: signedDelivery({ secret: NEW_SECRET }), secrets: [NEW_SECRET], valid: false },
];

/** The standard scheme alone also rejects a timestamp older than its 5-minute tolerance. */
const standardOnlyCases = (): Case[] => [
  { name: "stale timestamp", rawBody: body, headers: signedDelivery({ secret: NEW_SECRET, now: Date.now() - 10 * 60_000 }), secrets: [NEW_SECRET], valid: false },
  { name: "missing webhook-id", rawBody: body, headers: { ...signedDelivery({ secret: NEW_SECRET }), "webhook-id": "" }, secrets: [NEW_SECRET], valid: false },
];

describe("the receiver examples in docs/webhooks.md", () => {
  let node: {
    verify: (rawBody: Buffer, header: string, secret: string) => boolean;
    verifyStandardWebhook: (rawBody: Buffer, headers: Record<string, string>, secrets: string | string[]) => boolean;
  };

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), "rb-doc-examples-"));
    const seed = join(dir, "seed.mjs");
    const standard = join(dir, "standard.mjs");
    writeFileSync(seed, block("js", "export function verify("));
    writeFileSync(standard, block("js", "export function verifyStandardWebhook("));
    node = { ...(await import(pathToFileURL(seed).href)), ...(await import(pathToFileURL(standard).href)) };
  });

  it("Node, seed scheme: X-Renderbus-Signature with the secret that signed it", () => {
    for (const example of cases()) {
      // The seed header is signed with the current secret only (docs/webhooks.md, "Rotating a secret").
      const current = example.name.startsWith("rotation") ? NEW_SECRET : example.secrets[0]!;
      expect(node.verify(Buffer.from(example.rawBody), example.headers["x-renderbus-signature"]!, current), example.name).toBe(example.valid);
      if (example.name.startsWith("rotation")) expect(node.verify(Buffer.from(example.rawBody), example.headers["x-renderbus-signature"]!, OLD_SECRET)).toBe(false);
    }
  });

  it("Node, Standard Webhooks without a package", () => {
    for (const example of [...cases(), ...standardOnlyCases()]) {
      expect(node.verifyStandardWebhook(Buffer.from(example.rawBody), example.headers, example.secrets), example.name).toBe(example.valid);
    }
  });

  const python = spawnSync("python3", ["--version"]).status === 0;
  it.skipIf(!python)("Python, both schemes, run by python3", () => {
    // Both examples define `verify`: each runs in its own namespace, as in its own module.
    const program = [
      "import json, sys",
      `seed, standard = {}, {}`,
      `exec(${JSON.stringify(block("python", "header: str, secret: str) -> bool"))}, seed)`,
      `exec(${JSON.stringify(block("python", "def signing_key("))}, standard)`,
      "results = []",
      "for case in json.load(sys.stdin):",
      "    raw = case['rawBody'].encode()",
      "    results.append({",
      "        'seed': seed['verify'](raw, case['headers']['x-renderbus-signature'], case['seedSecret']),",
      "        'standard': any(standard['verify'](raw, case['headers'], secret) for secret in case['secrets']),",
      "    })",
      "print(json.dumps(results))",
    ].join("\n");
    const all = [...cases(), ...standardOnlyCases()];
    const input = all.map((example) => ({ ...example, seedSecret: example.name.startsWith("rotation") ? NEW_SECRET : example.secrets[0] }));
    const run = spawnSync("python3", ["-c", program], { input: JSON.stringify(input), encoding: "utf8", timeout: 60_000 });
    expect(run.stderr).toBe("");
    const results = JSON.parse(run.stdout) as Array<{ seed: boolean; standard: boolean }>;
    all.forEach((example, index) => {
      expect(results[index]!.standard, `standard: ${example.name}`).toBe(example.valid);
      // The seed scheme signs no timestamp or id: only the body and secret decide.
      const seedValid = ["tampered body", "re-serialised body", "another secret"].includes(example.name) ? false : true;
      expect(results[index]!.seed, `seed: ${example.name}`).toBe(seedValid);
    });
  });
});
