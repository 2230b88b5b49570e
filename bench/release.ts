/**
 * A released engine to measure beside the current tree in the same run. Releases are listed with
 * their commits in `releases.json` at the repository's root; `bench_against` names the release the
 * benchmarks' goals are stated against. Each release is built once in a git worktree of its own
 * under `.cache/releases/<version>` (its npm packages from its own lock, then `npm run build`) and
 * reused by later runs.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { root } from './paths.ts';
import { log } from './run.ts';

export interface Release {
  version: string;
  commit: string;
}

interface ReleaseList {
  bench_against: string;
  releases: Release[];
}

/** A release built and ready to run: `root` is its checkout, as `startEngine`'s `engineRoot`. */
export interface BuiltRelease extends Release {
  root: string;
}

async function releaseList(): Promise<ReleaseList> {
  return JSON.parse(await readFile(join(root, 'releases.json'), 'utf8')) as ReleaseList;
}

/** The release named `version`, or (undefined) the one the goals are stated against; BENCH_RELEASE overrides. */
export async function releaseNamed(version = process.env['BENCH_RELEASE']): Promise<Release> {
  const list = await releaseList();
  const wanted = version === undefined || version === '' ? list.bench_against : version;
  const release = list.releases.find((r) => r.version === wanted);
  if (release === undefined) throw new Error(`releases.json lists no release ${wanted} (it lists ${list.releases.map((r) => r.version).join(', ')})`);
  return release;
}

const run = async (cmd: string, args: string[], cwd: string): Promise<void> => {
  try {
    await promisify(execFile)(cmd, args, { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false' } });
  } catch (err) {
    const { stderr = '', stdout = '' } = err as { stderr?: string; stdout?: string };
    throw new Error(`${cmd} ${args.join(' ')} in ${cwd} failed: ${(stderr || stdout).slice(-2000)}`);
  }
};

/** Builds `release` in its worktree unless a build is already there; resolves to where it is. */
export async function buildRelease(release: Release): Promise<BuiltRelease> {
  const dir = join(root, '.cache/releases', release.version);
  if (existsSync(join(dir, 'dist/bin/main.js'))) return { ...release, root: dir };
  if (!existsSync(join(dir, 'package.json'))) {
    log(`bench: checking out ${release.version} (${release.commit.slice(0, 7)}) into ${dir}`);
    await run('git', ['worktree', 'prune'], root);
    await run('git', ['worktree', 'add', '--force', '--detach', dir, release.commit], root);
  }
  log(`bench: installing ${release.version}'s npm packages and building it (about a minute, once)`);
  await run('npm', ['install', '--no-audit', '--no-fund'], dir);
  await run('npm', ['run', 'build', '--silent'], dir);
  return { ...release, root: dir };
}
