import type { FastifyInstance } from "fastify";
import type { GatewayDeps } from "../deps.js";
import { buildOpenApiDocument } from "./openapi-document.js";

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** `/openapi.json` and a self-contained HTML reference at `/docs` (no CDN assets). */
export function registerOpenApiRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  const document = buildOpenApiDocument(deps.config.PUBLIC_URL);
  app.get("/openapi.json", async () => document);
  app.get("/docs", async (_request, reply) => {
    const sections = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations).map(([method, operation]) => {
        const op = operation as { summary: string; description: string; operationId: string };
        return `<section id="${op.operationId}"><h2><code>${method.toUpperCase()} ${escapeHtml(path)}</code></h2><p><strong>${escapeHtml(op.summary)}</strong></p><p>${escapeHtml(op.description)}</p></section>`;
      }),
    );
    const webhooks = Object.entries(document.webhooks).map(
      ([event, { post }]) => `<section id="webhook-${escapeHtml(event)}"><h2>Webhook <code>${escapeHtml(event)}</code></h2><p><strong>${escapeHtml(post.summary)}</strong></p><p>${escapeHtml(post.description)}</p></section>`,
    );
    reply.header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
    return reply
      .type("text/html; charset=utf-8")
      .send(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Renderbus API reference</title><style>body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;line-height:1.5}code{background:#f3f3f3;padding:.1rem .3rem}</style></head><body><h1>Renderbus API reference</h1><p>Machine-readable: <a href="/openapi.json">/openapi.json</a>. Authenticate with <code>Authorization: Bearer rb_...</code>.</p>${sections.join("")}${webhooks.join("")}</body></html>`);
  });
}
