import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { Logger } from '../../engine/log.ts';
import { htmlPage, mediaType, type StaticFile } from '../static-files.ts';

/** A built file of the dashboard: its text and media type. */
export interface Asset {
  body: string;
  type: string;
}

export interface DashboardBuild {
  /** The page: it loads the hashed assets below. */
  page: StaticFile;
  /** By file name (`main-<hash>.js`, `main-<hash>.css`): names change with content, so they are cached for good. */
  assets: ReadonlyMap<string, Asset>;
}

const entry = fileURLToPath(new URL('./client/main.tsx', import.meta.url));

let built: Promise<DashboardBuild> | null = null;

/**
 * The dashboard bundled from its sources in memory (esbuild: preact, uPlot and our code in one
 * script and one stylesheet), once per process: a failed build is tried again by the next call.
 * The sources ship with the build (scripts/build.sh).
 */
export function dashboardBuild(): Promise<DashboardBuild> {
  built ??= bundle().catch((err: unknown) => {
    built = null;
    throw err;
  });
  return built;
}

/**
 * Starts the build in the background (the gateway calls it at start), so the first visit does
 * not wait for it: about 70 ms alone, over a second on a busy host. A failure is logged, and the
 * dashboard's routes build again at their first request (500 with an error id if that fails too).
 */
export function prebuildDashboard(log: Logger): void {
  const started = performance.now();
  dashboardBuild().then(
    () => log.info('dashboard built', { ms: Math.round(performance.now() - started) }),
    (err: unknown) => log.error('dashboard build failed; its routes build again when asked', { err }),
  );
}

async function bundle(): Promise<DashboardBuild> {
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
    // The client's tsconfig extends the repository's, which a build in dist/ does not carry.
    tsconfigRaw: '{}',
    legalComments: 'none',
    logLevel: 'silent',
  });
  const assets = new Map<string, Asset>();
  for (const file of out.outputFiles) {
    const name = file.path.slice(file.path.lastIndexOf('/') + 1);
    if (name.endsWith('.js') || name.endsWith('.css')) assets.set(name, { body: file.text, type: mediaType(name) });
  }
  const named = (ext: string): string => [...assets.keys()].find((n) => n.endsWith(ext)) ?? '';
  const page = htmlPage({ title: 'Deliveries dashboard', root: 'app', styles: [`/dashboard/assets/${named('.css')}`], scripts: [`/dashboard/assets/${named('.js')}`], module: true });
  return { page, assets };
}
