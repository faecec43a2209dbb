import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { GatewayDeps } from "../deps.js";
import { apiReferenceSecurityHeaders } from "../dashboard/security-headers.js";
import { buildOpenApiDocument } from "./openapi-document.js";

/** Where the API reference is served, and its two scripts. */
export const API_REFERENCE_PATH = "/docs";

/**
 * Scalar's standalone browser bundle, from the installed npm package (no CDN). The package exports only its ES
 * modules, so the bundle is found beside the resolved entry point.
 */
function scalarBundle() {
  const entry = createRequire(import.meta.url).resolve("@scalar/api-reference");
  const packageDir = join(dirname(entry), "..");
  const { version } = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as { version: string };
  return { version, file: join(packageDir, "dist", "browser", "standalone.js") };
}

/**
 * Scalar's options (https://github.com/scalar/scalar, `ApiReferenceConfiguration`). Everything that would reach a
 * Scalar-hosted service is off: its web fonts (fonts.scalar.com), telemetry, the AI agent and MCP generator, and
 * the developer toolbar (share/deploy). Only the curl and SDK samples of the document are offered (`hiddenClients`).
 */
const scalarConfiguration = {
  url: "/openapi.json",
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: "never",
  hiddenClients: true,
  documentDownloadType: "json",
  hideDarkModeToggle: false,
};

/**
 * The page's own script (the CSP allows no inline script), loaded before the bundle. It puts the zod inside the
 * bundle in its jitless mode: otherwise zod probes `Function("")` to decide whether it may compile validators,
 * which the CSP (no 'unsafe-eval') refuses and reports as a violation. It then mounts the reference into #reference
 * once the document (and so the bundle, a classic script before it) has loaded.
 */
const MOUNT_SCRIPT = `"use strict";
globalThis.__zod_globalConfig = Object.assign(globalThis.__zod_globalConfig || {}, { jitless: true });
document.addEventListener("DOMContentLoaded", function () {
  globalThis.Scalar.createApiReference("#reference", ${JSON.stringify(scalarConfiguration)});
});
`;

const page = (bundlePath: string) =>
  [
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
    "<title>Renderbus API reference</title></head><body>",
    '<noscript><p>The API reference needs JavaScript. The machine-readable document is at <a href="/openapi.json">/openapi.json</a>.</p></noscript>',
    '<div id="reference"></div>',
    `<script src="${API_REFERENCE_PATH}/assets/reference.js"></script><script src="${bundlePath}"></script>`,
    "</body></html>",
  ].join("");

const acceptsGzip = (request: FastifyRequest) => /\bgzip\b/.test(String(request.headers["accept-encoding"] ?? ""));

/**
 * `/openapi.json` and the rendered API reference at `/docs`: Scalar's standalone bundle served from this gateway
 * (versioned URL, cached for a year) and a small mount script, under a page CSP (dashboard/security-headers.ts).
 */
export function registerOpenApiRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  const document = buildOpenApiDocument(deps.config.PUBLIC_URL);
  const headers = apiReferenceSecurityHeaders(deps.config.PUBLIC_URL);
  const bundle = scalarBundle();
  const bundlePath = `${API_REFERENCE_PATH}/assets/scalar-api-reference-${bundle.version}.js`;
  const html = page(bundlePath);
  // 4 MB of JavaScript, read and compressed on first use only (a gateway that nobody browses never loads it).
  let bundleBytes: { plain: Buffer; gzip: Buffer } | undefined;

  const withHeaders = (reply: FastifyReply) => {
    for (const [name, value] of Object.entries(headers)) reply.header(name, value);
    return reply;
  };

  app.get("/openapi.json", async () => document);
  app.get(API_REFERENCE_PATH, async (_request, reply) => withHeaders(reply).header("Cache-Control", "no-cache").type("text/html; charset=utf-8").send(html));
  app.get(`${API_REFERENCE_PATH}/assets/reference.js`, async (_request, reply) =>
    withHeaders(reply).header("Cache-Control", "no-cache").type("text/javascript; charset=utf-8").send(MOUNT_SCRIPT),
  );
  app.get(bundlePath, async (request, reply) => {
    if (!bundleBytes) {
      const plain = readFileSync(bundle.file);
      bundleBytes = { plain, gzip: gzipSync(plain) };
    }
    withHeaders(reply).header("Cache-Control", "public, max-age=31536000, immutable").header("Vary", "Accept-Encoding").type("text/javascript; charset=utf-8");
    return acceptsGzip(request) ? reply.header("Content-Encoding", "gzip").send(bundleBytes.gzip) : reply.send(bundleBytes.plain);
  });
}
