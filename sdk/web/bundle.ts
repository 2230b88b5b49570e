/**
 * The web SDK bundled in memory (esbuild, a development package): the page script as an ES module
 * for bundlers (`web.mjs`) and as a classic script that sets `window.svc` (`web.js`), the service
 * worker (`web-sw.js`) and the demo page's script (`demo.js`). scripts/build.sh writes them into
 * the build, where the gateway serves them; a gateway run from the sources bundles them at the
 * first request (gateway/static/web-sdk.ts). ./build.ts prints their sizes against the budgets.
 */
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions } from 'esbuild';

/** Minified and gzipped, in bytes. */
export const budgets: Readonly<Record<string, number>> = { 'web.js': 12 * 1024, 'web-sw.js': 6 * 1024 };

const source = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

const common: BuildOptions = { bundle: true, write: false, minify: true, target: 'es2020', legalComments: 'none', logLevel: 'silent', tsconfigRaw: '{}' };

const outputs: Record<string, BuildOptions> = {
  'web.mjs': { entryPoints: [source('./src/index.ts')], format: 'esm' },
  'web.js': { entryPoints: [source('./src/index.ts')], format: 'iife', globalName: 'svc' },
  'web-sw.js': { entryPoints: [source('./src/worker.ts')], format: 'iife' },
  'demo.js': { entryPoints: [source('./demo/demo.ts')], format: 'iife' },
};

export async function bundleWebSdk(): Promise<Map<string, string>> {
  const files = await Promise.all(
    Object.entries(outputs).map(async ([name, options]) => {
      const out = await build({ ...common, ...options });
      return [name, out.outputFiles?.[0]?.text ?? ''] as const;
    }),
  );
  return new Map(files);
}
