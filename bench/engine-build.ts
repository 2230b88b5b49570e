import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { root } from './paths.ts';
import { log } from './run.ts';

/** What scripts/build.sh compiles, bundles or copies into dist/. */
const inputs = ['schemas', 'engine', 'gateway', 'actors', 'bin', 'package.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.sh', 'scripts/bundle-dashboard.ts', 'sdk/web'];

let cached: string | null | undefined;

/**
 * The build in dist/ (its bin/main.js) when it is newer than every file it is made of, else null.
 * An engine started from it spends half the CPU of one started from the sources through tsx: the
 * suite starts a hundred (`make test` builds first), and a bench measures it. tsc writes bin/main.js after it read the
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

let building: Promise<void> | undefined;

/**
 * This tree's `engine` command, once dist/ is fresh: `bin/engine.js` runs the build whenever there
 * is one, so a bench started after an edit would measure the code before it. Builds once a run.
 */
export async function engineBin(): Promise<string> {
  if (process.env['ENGINE_FROM_SOURCE'] !== '1' && freshBuild() === null) {
    building ??= (async () => {
      log('bench: dist/ is missing or older than its sources; building it (npm run build)');
      await promisify(execFile)('npm', ['run', 'build', '--silent'], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
      cached = undefined;
      if (freshBuild() === null) throw new Error('npm run build left dist/ older than its sources');
    })();
    await building;
  }
  return join(root, 'bin/engine.js');
}

/**
 * The node flags a checkout's engine runs with (its package.json's `config.node_flags`, which
 * `make run` and docs/configuration.md use): a bench starts each engine as its users do, a release
 * without them as it was.
 */
export function engineNodeFlags(engineRoot = root): string[] {
  const pkg = JSON.parse(readFileSync(join(engineRoot, 'package.json'), 'utf8')) as { config?: { node_flags?: unknown } };
  const flags = pkg.config?.node_flags;
  return typeof flags === 'string' ? flags.split(' ').filter((flag) => flag !== '') : [];
}
