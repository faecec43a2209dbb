#!/usr/bin/env node
// In the repository the CLI runs from its TypeScript source through tsx; the published package ships dist/ only.
import { existsSync } from "node:fs";

const source = new URL("../src/cli/main.ts", import.meta.url);
if (existsSync(source)) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(source.href);
} else {
  await import(new URL("../dist/cli/main.js", import.meta.url).href);
}
