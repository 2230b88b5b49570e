import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Calls the bundler `name` exported by the module at `bundler`, which only the sources have (it
 * needs esbuild, a development package); a build carries the bundler's output at `prebuilt`
 * instead (scripts/build.sh), so there its absence is an error that names what is missing.
 */
export async function bundleFromSources<T>(bundler: URL, name: string, prebuilt: URL, what: string): Promise<T> {
  if (!existsSync(bundler)) throw new Error(`${what} is missing from this build: ${fileURLToPath(prebuilt)} (scripts/build.sh writes it)`);
  // Not a literal: the compiler must not carry the bundler, and esbuild with it, into the build.
  const exports = (await import(bundler.href)) as Record<string, () => Promise<T>>;
  const bundle = exports[name];
  if (!bundle) throw new Error(`${fileURLToPath(bundler)} exports no ${name}`);
  return bundle();
}
