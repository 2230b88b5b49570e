import { existsSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { bundleFromSources } from './bundled.ts';
import { mediaType, type StaticFile } from './files.ts';

/** The web SDK's files scripts/build.sh writes into the build, next to this module. */
const prebuilt = new URL('./web-sdk/', import.meta.url);
/** Its bundler, which only the sources have (it needs esbuild, a development package). */
const bundler = new URL('../../sdk/web/bundle.ts', import.meta.url);

/**
 * The worker may control pages above its folder (`/sdk/`): a page of the engine's origin, such as
 * the demo, registers it with scope `/`.
 */
const workerHeaders = [['Service-Worker-Allowed', '/']] as const;

/**
 * The web SDK's files by name (`web.js`, `web.mjs`, `web-sw.js`, `demo.js`; sdk/web/README.md):
 * the build's, or bundled then from the sources, so that a gateway never bundles at start.
 */
export async function webSdkFiles(): Promise<Record<string, StaticFile>> {
  const files = existsSync(prebuilt) ? await readBuilt() : await bundleSources();
  return Object.fromEntries(
    [...files].map(([name, body]) => [name, { body, type: mediaType(name), ...(name === 'web-sw.js' ? { headers: workerHeaders } : {}) }]),
  );
}

async function readBuilt(): Promise<Map<string, string>> {
  const names = (await readdir(prebuilt)).filter((n) => n.endsWith('.js') || n.endsWith('.mjs'));
  return new Map(await Promise.all(names.map(async (name) => [name, await readFile(new URL(name, prebuilt), 'utf8')] as const)));
}

function bundleSources(): Promise<Map<string, string>> {
  return bundleFromSources<Map<string, string>>(bundler, 'bundleWebSdk', prebuilt, 'the web SDK');
}
