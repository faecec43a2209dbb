import { existsSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import type { FastifyInstance, FastifyReply } from "fastify";
import fastifyStatic from "@fastify/static";
import type { GatewayDeps } from "../deps.js";
import { dashboardSecurityHeaders } from "./security-headers.js";

/** Where the dashboard lives. API routes occupy the root (`/jobs`, `/batches`, ...), so the app gets its own prefix. */
export const DASHBOARD_PATH = "/app";

/** The Vite build output of apps/dashboard, relative to this file in the source tree. */
const DEFAULT_DIST_DIR = resolve(import.meta.dirname, "../../../../apps/dashboard/dist");

// Hashed file names (Vite puts a content hash in every asset name) can be cached forever; index.html never.
const ASSET_PATH = /^assets\/[\w.-]+$/;
// A path whose last segment has an extension asks for a file; anything else is a client-side route.
const LOOKS_LIKE_FILE = /\.[a-z0-9]+$/i;

export interface DashboardOptions {
  /** The built dashboard; defaults to apps/dashboard/dist (DASHBOARD_DIST_DIR overrides it). */
  distDir?: string;
}

/**
 * Serves the built dashboard at `/app` with an index.html fallback for client routes, and strict security headers
 * on every dashboard response. The gateway starts without a build: the dashboard URL then answers 503 with a hint.
 */
export async function registerDashboard(app: FastifyInstance, deps: GatewayDeps, options: DashboardOptions = {}): Promise<void> {
  const distDir = options.distDir ?? process.env.DASHBOARD_DIST_DIR ?? DEFAULT_DIST_DIR;
  const indexFile = join(distDir, "index.html");
  if (!existsSync(indexFile)) {
    deps.logger.warn({ distDir }, "dashboard build missing: run `npm run build -w @renderbus/dashboard`; serving 503 at /app");
  }
  const headers = dashboardSecurityHeaders(deps.config.PUBLIC_URL, await outputRedirectOrigins(deps));
  const rootTaken = app.hasRoute({ method: "GET", url: "/" });

  await app.register(async (scope) => {
    await scope.register(fastifyStatic, { root: distDir, serve: false, index: false, dotfiles: "deny" });
    scope.addHook("onSend", async (_request, reply, payload) => {
      for (const [name, value] of Object.entries(headers)) reply.header(name, value);
      return payload;
    });

    const serve = async (path: string, reply: FastifyReply) => {
      if (!existsSync(indexFile)) {
        return reply
          .status(503)
          .type("text/plain; charset=utf-8")
          .header("Cache-Control", "no-store")
          .send("The Renderbus dashboard has not been built. Run `npm run build -w @renderbus/dashboard` and reload.\n");
      }
      if (LOOKS_LIKE_FILE.test(path)) {
        if (!isFileInside(distDir, path)) return reply.status(404).type("text/plain; charset=utf-8").send("Not found\n");
        return ASSET_PATH.test(path)
          ? reply.sendFile(path, { maxAge: "365d", immutable: true })
          : reply.sendFile(path, { maxAge: 0, immutable: false });
      }
      return reply.header("Cache-Control", "no-cache").sendFile("index.html", { cacheControl: false });
    };

    // A person who opens the bare gateway URL in a browser lands on the dashboard; API clients keep the JSON 404.
    if (!rootTaken) {
      scope.get("/", async (request, reply) =>
        (request.headers.accept ?? "").includes("text/html") ? reply.redirect(`${DASHBOARD_PATH}/`, 302) : reply.callNotFound(),
      );
    }
    scope.get(DASHBOARD_PATH, async (_request, reply) => serve("", reply));
    scope.get(`${DASHBOARD_PATH}/*`, async (request, reply) => serve((request.params as { "*": string })["*"], reply));
  });
}

/** True when `path` names a regular file under `root` (no traversal, no dotfiles, no directories). */
function isFileInside(root: string, path: string): boolean {
  if (path.split("/").some((segment) => segment === "" || segment.startsWith("."))) return false;
  const absolute = resolve(root, path);
  if (!absolute.startsWith(resolve(root) + "/")) return false;
  try {
    return statSync(absolute).isFile();
  } catch {
    return false;
  }
}

/** The origin `/outputs/*` redirects previews to (the S3 store's presigned URLs), or none when downloads stream. */
async function outputRedirectOrigins(deps: GatewayDeps): Promise<string[]> {
  if (deps.config.STORAGE !== "s3" || deps.config.S3_DOWNLOADS !== "redirect") return [];
  // Signing is local: a URL for any key shows the origin (path style or the bucket's own host name).
  const sample = await deps.outputs.presignedDownloadUrl("origin/probe", { expiresInSeconds: 60 });
  return sample ? [new URL(sample).origin] : [];
}
