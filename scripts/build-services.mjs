#!/usr/bin/env node
// `node scripts/build-services.mjs [service...]`: bundles each service's src/main.ts into services/<name>/dist/main.mjs.
//
// Why: run through tsx, every service carried tsx's loader-hooks thread (its own V8 isolate) and compiled its
// TypeScript in-process, ~30-40 MB of RSS per service for nothing. The bundle holds the service and the
// @renderbus/* workspace code it imports (those packages export TypeScript sources, so plain node cannot load them);
// every npm package stays an import resolved from node_modules at run time, so native addons, dynamic requires
// and packages reading their own files keep working as they do under tsx.
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const servicesDir = path.join(root, 'services');

/** Services with a `src/main.ts`, or the ones named on the command line. */
function servicesToBuild(names) {
  const all = readdirSync(servicesDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(path.join(servicesDir, entry.name, 'src', 'main.ts')))
    .map((entry) => entry.name)
    .sort();
  const unknown = names.filter((name) => !all.includes(name));
  if (unknown.length > 0) throw new Error(`unknown service(s): ${unknown.join(', ')} (known: ${all.join(', ')})`);
  return names.length > 0 ? names : all;
}

/** Bundles the workspace's own code, leaves every npm package (and node: built-in) to node's resolver. */
export const npmPackagesExternal = {
  name: 'npm-packages-external',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.path.startsWith('@renderbus/')) return undefined;
      return { path: args.path, external: true };
    });
  },
};

/**
 * Keeps `import.meta.url` / `dirname` / `filename` meaning the source file's location. In a bundle they would name
 * main.mjs, which breaks paths relative to a source file (the gateway's dashboard directory, the dispatcher's
 * package.json) and makes the admin CLI's "am I the entry point?" check true inside the auth service. Each use is
 * rewritten to the source file's location relative to the bundle, so an image or checkout moved elsewhere still works.
 */
function sourceLocationImportMeta(outdir) {
  return {
    name: 'source-location-import-meta',
    setup(build) {
      build.onLoad({ filter: /\.[cm]?tsx?$/ }, async (args) => {
        if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined;
        const source = await readFile(args.path, 'utf8');
        if (!/import\.meta\.(url|dirname|filename)\b/.test(source)) return undefined;
        const relativeFile = path.relative(outdir, args.path).split(path.sep).join('/');
        const fileUrl = `new URL(${JSON.stringify(relativeFile)}, import.meta.url)`;
        const replacements = {
          url: `${fileUrl}.href`,
          filename: `__sourceFileURLToPath(${fileUrl})`,
          dirname: `__sourceDirname(__sourceFileURLToPath(${fileUrl}))`,
        };
        // One pass, so the `import.meta.url` inside a replacement is not rewritten again.
        const contents = source.replace(/import\.meta\.(url|dirname|filename)\b/g, (_, property) => replacements[property]);
        return {
          contents: `import { fileURLToPath as __sourceFileURLToPath } from "node:url";\nimport { dirname as __sourceDirname } from "node:path";\n${contents}`,
          loader: path.extname(args.path).endsWith('x') ? 'tsx' : 'ts',
          resolveDir: path.dirname(args.path),
        };
      });
    },
  };
}

/** Builds the bundles; returns per-service output sizes. */
/** esbuild options every bundle run by plain node shares (services and the image's operator tools). */
export const NODE_BUNDLE = {
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  // Stack traces only need the mappings; the sources are in the image and the checkout.
  sourcesContent: false,
  // Class and function names stay as written: logs and error reports print them.
  keepNames: true,
  logLevel: 'warning',
};

export async function buildServices(names = []) {
  const built = [];
  await Promise.all(
    servicesToBuild(names).map(async (service) => {
      const outdir = path.join(servicesDir, service, 'dist');
      const result = await build({
        entryPoints: [path.join(servicesDir, service, 'src', 'main.ts')],
        outfile: path.join(outdir, 'main.mjs'),
        ...NODE_BUNDLE,
        metafile: true,
        plugins: [npmPackagesExternal, sourceLocationImportMeta(outdir)],
      });
      const bytes = Object.entries(result.metafile.outputs).find(([file]) => file.endsWith('.mjs'))?.[1].bytes ?? 0;
      built.push({ service, bytes });
    }),
  );
  return built.sort((a, b) => a.service.localeCompare(b.service));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  try {
    const built = await buildServices(process.argv.slice(2));
    const sizes = built.map(({ service, bytes }) => `${service} ${(bytes / 1024).toFixed(0)} kB`).join(', ');
    console.log(`[build-services] bundled ${sizes} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  } catch (error) {
    // esbuild has already printed the located errors.
    console.error(`[build-services] failed: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
    process.exit(1);
  }
}
