#!/usr/bin/env node
// `node scripts/build-image-tools.mjs`: bundles the two TypeScript programs an operator runs inside the image besides
// the services: the admin CLI (services/auth/dist/admin.mjs) and the gRPC health probe of docker compose
// (deploy/probes/dist/grpc-health.mjs).
//
// Why: the runtime image installs production dependencies only (SECURITY-AUDIT finding 24), so it has no tsx to run
// TypeScript with. As in scripts/build-services.mjs, the bundles hold the @renderbus/* workspace code (those packages
// export TypeScript sources) and leave every npm package to node's resolver.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { NODE_BUNDLE, npmPackagesExternal } from './build-services.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Entry point -> bundle, both relative to the repository root. */
export const IMAGE_TOOLS = {
  'services/auth/src/admin/cli.ts': 'services/auth/dist/admin.mjs',
  'deploy/probes/grpc-health.ts': 'deploy/probes/dist/grpc-health.mjs',
};

export async function buildImageTools() {
  await Promise.all(
    Object.entries(IMAGE_TOOLS).map(([entry, outfile]) =>
      build({
        ...NODE_BUNDLE,
        entryPoints: [path.join(root, entry)],
        outfile: path.join(root, outfile),
        // The admin CLI runs when `import.meta.url` is the script node was started with: in the bundle, the bundle's.
        plugins: [npmPackagesExternal],
      }),
    ),
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    await buildImageTools();
    console.log(`[build-image-tools] bundled ${Object.values(IMAGE_TOOLS).join(', ')}`);
  } catch (error) {
    console.error(`[build-image-tools] failed: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
    process.exit(1);
  }
}
