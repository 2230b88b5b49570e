import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
/** What scripts/build.sh compiles, bundles or copies into dist/. */
const inputs = ['schemas', 'engine', 'gateway', 'actors', 'bin', 'package.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.sh', 'scripts/bundle-dashboard.ts', 'sdk/web'];

let cached: string | null | undefined;

/**
 * The build in dist/ (its bin/main.js) when it is newer than every file it is made of, else null.
 * An engine started from it spends half the CPU of one started from the sources through tsx, and
 * the suite starts a hundred; `make test` builds first. tsc writes bin/main.js after it read the
 * sources, so a source saved during or after the build makes it stale.
 */
export function freshBuild(): string | null {
  if (cached !== undefined) return cached;
  const main = join(root, 'dist/bin/main.js');
  const built = mtime(main);
  const complete = mtime(join(root, 'dist/package.json'));
  cached = built !== null && complete !== null && inputs.every((input) => newest(join(root, input)) < built) ? main : null;
  return cached;
}

function mtime(path: string): number | null {
  return statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? null;
}

/** The latest modification time of a file, or of any file under a directory (0 when absent). */
function newest(path: string): number {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (stat === undefined) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path).reduce((latest, name) => Math.max(latest, newest(join(path, name))), stat.mtimeMs);
}
