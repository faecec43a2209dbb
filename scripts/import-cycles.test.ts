import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findImportCycles } from "./import-cycles.js";

describe("import cycles", () => {
  it("finds none among the services', libraries', packages' and apps' source files", () => {
    expect(findImportCycles(["services", "libs", "packages", "apps"])).toEqual([]);
  });

  it("reports a cycle of type-only imports through an index file, as its files in import order", () => {
    const base = mkdtempSync(join(tmpdir(), "import-cycles-"));
    mkdirSync(join(base, "src", "orgs"), { recursive: true });
    writeFileSync(join(base, "src", "store.ts"), 'import { createOrg } from "./orgs/index.js";\nexport const store = createOrg;\n');
    writeFileSync(join(base, "src", "orgs", "index.ts"), 'export * from "./create-org.js";\n');
    writeFileSync(join(base, "src", "orgs", "create-org.ts"), 'import type { store } from "../store.js";\nexport const createOrg = (s?: typeof store) => s;\n');
    writeFileSync(join(base, "src", "leaf.ts"), 'import { store } from "./store.js";\nexport const leaf = store;\n');
    writeFileSync(join(base, "src", "store.test.ts"), 'import { leaf } from "./leaf.js";\nimport { store } from "./store.js";\nexport { leaf, store };\n');
    expect(findImportCycles(["src"], base)).toEqual([["src/orgs/create-org.ts", "src/store.ts", "src/orgs/index.ts"]]);
  });
});
