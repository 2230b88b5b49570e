import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { mediaType } from '../static/files.ts';
import type { Asset, DashboardBundler } from './assets.ts';

const entry = fileURLToPath(new URL('./client/main.tsx', import.meta.url));

/**
 * The dashboard bundled from its sources in memory: preact, uPlot and our code in one script and
 * one stylesheet, named after their content's hash. A build tool, left out of the build
 * (tsconfig.build.json): scripts/build.sh writes its output there, and a gateway run from the
 * sources calls it on the first visit of the dashboard (./assets.ts).
 */
export const bundleDashboard: DashboardBundler = async () => {
  const out = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    outdir: '/assets',
    entryNames: '[name]-[hash]',
    format: 'esm',
    target: 'es2020',
    minify: true,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    // These options are the whole build: the client's tsconfig is for type checking only.
    tsconfigRaw: '{}',
    legalComments: 'none',
    logLevel: 'silent',
  });
  const assets = new Map<string, Asset>();
  for (const file of out.outputFiles) {
    const name = file.path.slice(file.path.lastIndexOf('/') + 1);
    if (name.endsWith('.js') || name.endsWith('.css')) assets.set(name, { body: file.text, type: mediaType(name) });
  }
  return assets;
};
