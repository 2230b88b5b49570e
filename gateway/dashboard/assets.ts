import { existsSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { bundleFromSources } from '../static/bundled.ts';
import { htmlPage, mediaType, type StaticFile } from '../static/files.ts';

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

/** Bundles the client's sources into its script and stylesheet, by file name (./bundler.ts). */
export type DashboardBundler = () => Promise<ReadonlyMap<string, Asset>>;

/** The bundle scripts/build.sh writes into the build, next to this module. */
const prebuilt = new URL('./bundle/', import.meta.url);
/** The bundler, which only the sources have (it needs esbuild, a development package). */
const bundler = new URL('./bundler.ts', import.meta.url);

let built: Promise<DashboardBuild> | null = null;

/**
 * The dashboard, loaded at its first request, once per process (a failure is tried again by the
 * next call): the bundle the build carries, or, run from the sources, one made then in memory, so
 * that a gateway never bundles at start.
 */
export function dashboardBuild(): Promise<DashboardBuild> {
  built ??= load().catch((err: unknown) => {
    built = null;
    throw err;
  });
  return built;
}

async function load(): Promise<DashboardBuild> {
  const assets = existsSync(prebuilt) ? await readBundle() : await bundleSources();
  const named = (ext: string): string => [...assets.keys()].find((n) => n.endsWith(ext)) ?? '';
  const page = htmlPage({ title: 'Deliveries dashboard', root: 'app', styles: [`/dashboard/assets/${named('.css')}`], scripts: [`/dashboard/assets/${named('.js')}`], module: true });
  return { page, assets };
}

async function readBundle(): Promise<ReadonlyMap<string, Asset>> {
  const names = (await readdir(prebuilt)).filter((n) => n.endsWith('.js') || n.endsWith('.css'));
  return new Map(await Promise.all(names.map(async (name) => [name, { body: await readFile(new URL(name, prebuilt), 'utf8'), type: mediaType(name) }] as const)));
}

function bundleSources(): Promise<ReadonlyMap<string, Asset>> {
  return bundleFromSources<ReadonlyMap<string, Asset>>(bundler, 'bundleDashboard', prebuilt, "the dashboard's bundle");
}
