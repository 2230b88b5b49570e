import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ConfigError } from '../../engine/infra/process/config.ts';

/** The HTTP server implementations (docs/configuration.md, HTTP_SERVER). */
export type ServerName = 'uws' | 'node';
export type ServerSetting = ServerName | 'auto';

/**
 * The server to run: `auto` takes uWebSockets.js when its native addon loads for this Node and
 * platform, else node:http (`fallback` hears why); `uws` forced without one is a ConfigError (exit 2)
 * saying why and what to do.
 */
export function chooseServer(setting: ServerSetting, fallback: (why: string) => void = () => undefined, probe: () => string | null = uwsProblem): ServerName {
  if (setting === 'node') return 'node';
  const problem = probe();
  if (problem === null) return 'uws';
  if (setting === 'auto') {
    fallback(problem);
    return 'node';
  }
  throw new ConfigError(`HTTP_SERVER=uws: ${problem}; use HTTP_SERVER=node (or auto), or Node 20`);
}

/**
 * Why uWebSockets.js cannot serve here, or null. The package falls back to a pure-JavaScript
 * stand-in that does not work (with a warning) when its addon fails to load, so the addon the
 * package would pick (`binaries/uws_<platform>_<arch>_<ABI>.node`) is loaded directly first.
 */
export function uwsProblem(): string | null {
  if (/^(1|true)$/i.test(process.env['UWS_USE_FALLBACK'] ?? '')) return 'UWS_USE_FALLBACK is set, which makes uWebSockets.js use its JavaScript stand-in';
  const require = createRequire(import.meta.url);
  const where = `Node ${process.versions.node.split('.')[0]} on ${process.platform}-${process.arch}${glibc()}`;
  let addon: string;
  try {
    addon = join(dirname(require.resolve('uWebSockets.js/package.json')), 'binaries', `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
  } catch {
    return 'uWebSockets.js is not installed';
  }
  if (!existsSync(addon)) return `uWebSockets.js has no native addon for ${where}`;
  try {
    require(addon);
    return null;
  } catch (err) {
    return `the uWebSockets.js native addon does not load on ${where}: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`;
  }
}

/** ` (glibc 2.36)` on glibc Linux, else ''. */
function glibc(): string {
  const header = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header;
  return header?.glibcVersionRuntime ? ` (glibc ${header.glibcVersionRuntime})` : '';
}
