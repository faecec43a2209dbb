# One image for every Renderbus service; SERVICE picks which one runs:
#   docker build -t renderbus .
#   docker run -e SERVICE=gateway renderbus        (gateway | auth | jobs | worker | webhook-dispatcher)
# Services run as plain node from bundles built in the image (scripts/build-services.mjs), exactly as `npm start`
# runs them: no TypeScript loader or compiler in the running process (docs/operations.md, "How services run").
#
# Three stages: `manifests` extracts the package manifests, `build` installs every dependency and builds the bundles
# and the dashboard, `runtime` (the image) holds those outputs and production dependencies only: no esbuild, vite,
# tsx, playwright-core or compiler a compromised service could use (SECURITY-AUDIT finding 24). Node 24 LTS: Node 20
# reached its end of life in April 2026.

FROM node:24-bookworm-slim AS manifests
WORKDIR /src
COPY . .
# Only the package manifests, in their folders, so the dependency layers below are rebuilt when a manifest changes and
# not on every source edit.
RUN mkdir /manifests \
 && find . -path ./node_modules -prune -o -name package.json -not -path "*/node_modules/*" -print \
    | xargs -I{} cp --parents {} /manifests \
 && cp package-lock.json .npmrc /manifests/

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY --from=manifests /manifests/ ./
# `npm install`, not `npm ci`: the lockfile lacks other platforms' optional packages (scripts/bootstrap.mjs says why);
# it still installs the versions the lockfile pins. Dev dependencies: esbuild and vite build what the runtime copies.
RUN npm install --no-audit --no-fund
COPY tsconfig.base.json tsconfig.json ./
COPY proto ./proto
COPY libs ./libs
COPY services ./services
COPY apps ./apps
COPY packages ./packages
COPY scripts ./scripts
COPY deploy/probes ./deploy/probes
# The service bundles, the dashboard the gateway serves at /app, and the admin CLI and compose's gRPC health probe
# (scripts/build-image-tools.mjs), so nothing in the runtime stage needs tsx.
RUN npm run build -w @renderbus/dashboard \
 && node scripts/build-services.mjs \
 && node scripts/build-image-tools.mjs

FROM node:24-bookworm-slim AS runtime
# ffmpeg/ffprobe run the media jobs in the worker, inside bubblewrap (bwrap) sandboxes; tini forwards signals so
# SIGTERM reaches node and it drains.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg bubblewrap tini ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=manifests /manifests/ ./
# Production dependencies only: the bundles keep npm packages external and import them from here. `--omit=optional`
# too: better-auth names vitest as an optional peer, so the lockfile marks vitest, vite, tsx and esbuild
# "devOptional", which `--omit=dev` alone still installs. The other optional packages are platform binaries of build
# tools and pg-cloudflare (Cloudflare Workers only); the services need none of them.
RUN npm install --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force
# Each bundle at its place in the tree: bundles find files beside their sources (the gateway the dashboard build in
# apps/dashboard/dist, the dispatcher its package.json, copied with the manifests above).
COPY --from=build /app/services/gateway/dist ./services/gateway/dist
COPY --from=build /app/services/auth/dist ./services/auth/dist
COPY --from=build /app/services/jobs/dist ./services/jobs/dist
COPY --from=build /app/services/worker/dist ./services/worker/dist
COPY --from=build /app/services/webhook-dispatcher/dist ./services/webhook-dispatcher/dist
COPY --from=build /app/apps/dashboard/dist ./apps/dashboard/dist
COPY --from=build /app/deploy/probes/dist ./deploy/probes/dist
COPY deploy/probes/nats-reachable.mjs ./deploy/probes/

# Production unless told otherwise: real secrets required, SSRF guards on (docs/operations.md).
ENV SERVICE=gateway \
    MODE=production \
    OUTPUT_DIR=/data/outputs
RUN mkdir -p /data/outputs && chown -R node:node /data
USER node
# Gateway HTTP, then the gRPC ports of auth, jobs and webhook-dispatcher, and auth's HTTP port.
EXPOSE 3000 50051 50052 50053 50061
ENTRYPOINT ["/usr/bin/tini", "--"]
# `exec` so node (not sh) is the process tini signals. dist/main.mjs turns source maps on for our code (stack traces
# name the TypeScript lines) and not for node_modules (scripts/build-services.mjs, launcherSource).
# The heap flags are SERVICE_NODE_FLAGS in libs/testing/src/system.ts (npm start, bench): an old-generation limit, and a
# young generation that Node 24 would otherwise let grow to 64 MB per semi-space beside it (GC-bound: see there), and
# one V8 worker thread, so GC threads do not spend a CPU limit's quota in bursts (SERVICE_V8_POOL_SIZE).
# The admin CLI: `node services/auth/dist/admin.mjs <command>` (docs/operations.md).
CMD ["sh", "-c", "exec node --max-old-space-size=128 --max-semi-space-size=8 --v8-pool-size=1 services/${SERVICE}/dist/main.mjs"]
