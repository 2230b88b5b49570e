import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { engineNodeFlags } from '../../bench/engine-build.ts';
import { summaryRows, type Figures } from '../../bench/release-writes-report.ts';
import { releaseNamed } from '../../bench/release.ts';
import { root } from '../../bench/paths.ts';

const releases = JSON.parse(readFileSync(join(root, 'releases.json'), 'utf8')) as { bench_against: string; releases: { version: string; commit: string }[] };

t.test('every release of releases.json is the commit whose package.json carries its version', async (t) => {
  t.ok(releases.releases.some((r) => r.version === releases.bench_against), 'the release the goals are set against is listed');
  for (const { version, commit } of releases.releases) {
    t.match(commit, /^[0-9a-f]{40}$/, `${version} names a whole commit`);
    const pkg = JSON.parse(execFileSync('git', ['show', `${commit}:package.json`], { cwd: root, encoding: 'utf8' })) as { version: string };
    t.equal(pkg.version, version, `${commit.slice(0, 7)} is ${version}`);
  }
});

t.test('the release is the one the goals name, or the one BENCH_RELEASE names; an unknown one is refused', async (t) => {
  t.equal((await releaseNamed(undefined)).version, releases.bench_against);
  t.equal((await releaseNamed('0.12.0')).version, '0.12.0');
  await t.rejects(releaseNamed('0.0.1'), /lists no release 0\.0\.1/);
});

t.test("a bench starts each checkout's engine with that checkout's node flags", async (t) => {
  const flags = engineNodeFlags();
  t.same(flags, ['--max-semi-space-size=32'], "this tree's, from package.json's config.node_flags");
  const taken = JSON.parse(execFileSync(process.execPath, [...flags, '-p', 'JSON.stringify(process.execArgv)'], { encoding: 'utf8' })) as string[];
  t.same(taken.slice(0, flags.length), flags, 'which node takes');
  const release = mkdtempSync(join(tmpdir(), 'release-'));
  writeFileSync(join(release, 'package.json'), JSON.stringify({ name: 'svc', version: '0.11.1' }));
  t.same(engineNodeFlags(release), [], 'a release without them runs as it was');
});

const figures = (engine: string, load: Figures['load'], writesPerSec: number, cpu: number, commands: number): Figures => ({
  engine,
  load,
  writes_per_sec: writesPerSec,
  p99_ms: 20,
  writes: writesPerSec * 10,
  failed: 0,
  cpu_cores: { engine: 1, redis: 0.5, load_generator: 0.8 },
  cpu_us_per_write: { engine: cpu / 2, engine_main: cpu / 3, redis: cpu / 2, total: cpu, load_generator: cpu },
  drain_seconds: 1,
  redis_commands: { calls_per_write: commands, commands: [] },
});

t.test('the writes goals are read against the release in the same run', async (t) => {
  const rows = summaryRows(
    [figures('this tree', 'identify', 25_000, 45, 5), figures('0.11.1', 'identify', 10_000, 120, 15), figures('this tree', 'mix', 19_000, 60, 6.5), figures('0.11.1', 'mix', 10_000, 120, 11)],
    'this tree',
    '0.11.1',
  );
  const goal = (measure: string): boolean | undefined => rows.find((r) => r.measure === measure)?.goal?.met;
  t.equal(goal('identify with tags, accepted, applied and recorded'), true, '2.5 times the release');
  t.equal(goal('identify with tags, engine + Redis CPU per write'), true, '0.375 of the release');
  t.equal(goal('SDK mix, accepted, applied and recorded'), false, '1.9 times is short of 2');
  t.equal(goal('SDK mix, Redis commands per write'), false, '6.5 commands is over 6');
  t.same(rows.find((r) => r.measure === 'SDK mix, Redis commands per write')?.release, { name: '0.11.1', value: 11 });
});
