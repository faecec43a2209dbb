# One image for every Renderbus service; SERVICE picks which one runs:
#   docker build -t renderbus .
#   docker run -e SERVICE=gateway renderbus        (gateway | auth | jobs | worker | webhook-dispatcher)
# Services run as plain node from bundles built in the image (scripts/build-services.mjs), exactly as `npm start`
# runs them: no TypeScript loader or compiler in the running process (docs/operations.md, "How services run").

FROM node:20-bookworm-slim AS manifests
WORKDIR /src
COPY . .
# Only the package manifests, in their folders, so the dependency layer below is rebuilt when a manifest changes and
# not on every source edit.
RUN mkdir /manifests \
 && find . -path ./node_modules -prune -o -name package.json -not -path "*/node_modules/*" -print \
    | xargs -I{} cp --parents {} /manifests \
 && cp package-lock.json .npmrc /manifests/

FROM node:20-bookworm-slim
# ffmpeg/ffprobe run the media jobs in the worker; tini forwards signals so SIGTERM reaches node and it drains.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg tini ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=manifests /manifests/ ./
# Dev dependencies: esbuild and vite build the bundles below; the operator CLI and deploy/probes run with tsx.
RUN npm ci --no-audit --no-fund && npm cache clean --force
COPY tsconfig.base.json tsconfig.json ./
COPY proto ./proto
COPY libs ./libs
COPY services ./services
COPY apps ./apps
COPY packages ./packages
COPY scripts ./scripts
COPY deploy/probes ./deploy/probes
# The gateway serves the dashboard's static build at /app. The service bundles keep npm packages external, so they
# run against this image's node_modules; they find files beside their sources (the dashboard build, package.json).
RUN npm run build -w @renderbus/dashboard && node scripts/build-services.mjs

# Production unless told otherwise: real secrets required, SSRF guards on (docs/operations.md).
ENV SERVICE=gateway \
    MODE=production \
    OUTPUT_DIR=/data/outputs
RUN mkdir -p /data/outputs && chown -R node:node /data
USER node
# Gateway HTTP, then the gRPC ports of auth, jobs and webhook-dispatcher, and auth's HTTP port.
EXPOSE 3000 50051 50052 50053 50061
ENTRYPOINT ["/usr/bin/tini", "--"]
# `exec` so node (not sh) is the process tini signals; source maps so stack traces name the TypeScript lines.
# --max-old-space-size: the same limit as SERVICE_MAX_OLD_SPACE_MB in libs/testing/src/system.ts (npm start, bench).
CMD ["sh", "-c", "exec node --max-old-space-size=128 --enable-source-maps services/${SERVICE}/dist/main.mjs"]
