import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';

/**
 * What CI counts (.ci/run, through .ci/lib.sh): its functions run here on a fake suite with the
 * real tap. A failure counts even when the file would pass if run again, assertions are counted
 * and not files, and a file of both passes counts once (docs/reliability.md#what-ci-counts).
 */

const root = fileURLToPath(new URL('../..', import.meta.url));
const tapBin = realpathSync(join(root, 'node_modules/.bin/tap'));

/** The environment without what tap hands its test files: a tap run here is a run of its own. */
function ownEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(_?TAP|NODE_OPTIONS$)/.test(k)) env[k] = v;
  }
  return { ...env, TAP_REPORTER: 'tap', CI_ROOT: root, TAP_BIN: tapBin, ...extra };
}

/** Runs bash with .ci/lib.sh sourced, in `cwd`; its stdout, stderr and status. */
function bash(script: string, cwd: string, env: Record<string, string> = {}): { stdout: string; stderr: string; status: number | null } {
  const full = `set -uo pipefail\n. "$CI_ROOT/scripts/lib.sh"\n. "$CI_ROOT/.ci/lib.sh"\n${script}`;
  const run = spawnSync('bash', ['-c', full], { cwd, env: ownEnv(env), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return { stdout: run.stdout, stderr: run.stderr, status: run.status };
}

function tempDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'ci-run-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A file that fails on its first run and passes on every later one; `runs` counts its runs. */
const failsOnce = (runs: string): string => `import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import t from 'tap';
const runs = new URL('./${runs}', import.meta.url);
const before = existsSync(runs) ? readFileSync(runs, 'utf8').length : 0;
appendFileSync(runs, 'x');
t.ok(true, 'steady');
t.ok(before > 0, 'passes from the second run on');
`;

/**
 * A fake suite: plain JavaScript files (no TypeScript loader to start), tap configured with the
 * repository's plugins so that tap does not rebuild its test class in the shared node_modules.
 */
function fakeSuite(t: Test): string {
  const dir = tempDir(t);
  const plugin = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { tap: { plugin: string[] } }).tap.plugin;
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'fake', private: true, type: 'module', tap: { plugin, 'disable-coverage': true, 'allow-empty-coverage': true, jobs: 2 } }));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  mkdirSync(join(dir, 'test'));
  const file = (name: string, text: string): void => writeFileSync(join(dir, 'test', name), text);
  file(
    'nested.test.mjs',
    `import t from 'tap';
t.ok(true, 'one');
t.test('group', async (t) => {
  t.ok(true, 'two');
  t.test('inner', async (t) => { t.ok(true, 'three'); t.ok(true, 'four'); });
});
t.ok(true, 'five');
`,
  );
  file('fails-once.test.mjs', failsOnce('fails-once.runs'));
  file('quarantined.test.mjs', failsOnce('quarantined.runs'));
  file(
    'both.test.mjs',
    `import t from 'tap';
t.ok(true, 'a');
t.ok(true, 'b');
t.ok(process.env.FAIL_HERE !== '1', 'c');
`,
  );
  writeFileSync(join(dir, 'quarantine'), '# a header\n\ntest/quarantined.test.mjs 2026-11-28 fails on its first run only\n');
  mkdirSync(join(dir, 'work'));
  return dir;
}

t.test('two passes of a fake suite', async (t) => {
  const dir = fakeSuite(t);
  const run = bash(
    `CI_WORK=work CI_QUARANTINE=quarantine
CI_TAP=(node "$TAP_BIN")
ci_begin
ci_pass first 'pass one' "\${CI_TAP[@]}" test/nested.test.mjs test/fails-once.test.mjs test/quarantined.test.mjs test/both.test.mjs
FAIL_HERE=1 ci_pass second 'pass two' "\${CI_TAP[@]}" test/both.test.mjs
ci_end`,
    dir,
  );
  const lines = run.stdout.trimEnd().split('\n');
  const closing = lines.slice(lines.findIndex((l) => l.startsWith('pass one: ')));
  t.not(run.status, 0, 'a failure fails the run');
  t.strictSame(
    closing,
    [
      'pass one: 11 passed, 1 failed, 0 skipped, 0 todo, in 4 files',
      'pass two: 2 passed, 1 failed, 0 skipped, 0 todo, in 1 files',
      'files run in more than one pass: 1; each counts once, from the pass in which it failed most',
      'quarantined test/quarantined.test.mjs failed in pass one and passed alone (entry: 2026-11-28 fails on its first run only)',
      'failed: test/both.test.mjs: 1 of 3 assertions (pass two)',
      '  not ok: c',
      'failed: test/fails-once.test.mjs: 1 of 2 assertions (pass one)',
      '  not ok: passes from the second run on',
      '10 passed, 2 failed',
    ],
    'the closing lines, each failed file with its failed assertions; `N passed, N failed` last',
  );
  t.equal(lines.filter((l) => /^\d+ passed, \d+ failed$/.test(l)).length, 1, 'one total line');

  // (a) Not run again, yet it would pass now: its failure still counts.
  t.equal(readFileSync(join(dir, 'test/fails-once.runs'), 'utf8'), 'x', 'a failed file is run once');
  const again = spawnSync('node', [tapBin, 'test/fails-once.test.mjs'], { cwd: dir, env: ownEnv(), encoding: 'utf8' });
  t.equal(again.status, 0, 'the file passes when run again');
  t.equal(readFileSync(join(dir, 'test/quarantined.runs'), 'utf8'), 'xx', 'a quarantined file that failed is run once more');

  // (b) Pass one ran 4 files: 5 assertions of nested subtests in one, 2 + 2 + 3 in the others.
  t.match(closing[0], /11 passed, 1 failed, .* in 4 files/, 'assertions, not files');

  // (c) both.test.mjs: 3 assertions in pass one, 2 + 1 failed in pass two; counted once, failed.
  t.equal(closing.at(-1), `${5 + 1 + 2 + 2} passed, ${1 + 1} failed`, 'a file of both passes counts once');
  t.notMatch(run.stdout, /closing line says/, 'every run counted as tap counts');
});

t.test('a failure that no assertion counts still fails', async (t) => {
  const dir = tempDir(t);
  const run = bash(
    `mkdir work; CI_WORK=work CI_QUARANTINE=none
ci_begin
ci_pass first 'lint' bash -c 'echo "1:1 error"; exit 2'
printf 'not a test\\n' >bad-quarantine
CI_QUARANTINE=bad-quarantine ci_quarantine_entries
ci_end`,
    dir,
  );
  t.not(run.status, 0);
  t.strictSame(run.stdout.trimEnd().split('\n').slice(-4), [
    'lint: 0 passed, 0 failed, 0 skipped, 0 todo, in 0 files',
    'failed: lint exited with 2 and no assertion failed',
    'failed: bad-quarantine line 1 is not `<test file> <YYYY-MM-DD> <reason>`: not a test',
    '0 passed, 2 failed',
  ]);
});

t.test('the counter agrees with tap on what tap prints', async (t) => {
  const dir = tempDir(t);
  // TAP as tap 21 prints it: a failure whose YAML quotes TAP, a subtest, an empty subtest, a file
  // that exited non-zero with every assertion passed, a timed-out file, skips and todos.
  const tap = `TAP version 14
1..4
# Subtest: test/a.test.ts
    ok 1 - one
    not ok 2 - quotes TAP
      ---
      found: |
        ok 1 - not an assertion
        not ok 2 - nor this
      ...
    # Subtest: group
        ok 1 - in a subtest
        not ok 2 - a todo # TODO later
        1..2
    ok 3 - group # time=2ms
    # Subtest: empty
        1..0
    ok 4 - empty # time=1ms
    ok 5 - skipped # SKIP not here
    1..5
not ok 1 - test/a.test.ts # time=10ms

# Subtest: test/b.test.ts
    ok 1 - fine
    1..1
not ok 2 - test/b.test.ts # time=5ms
  ---
  exitCode: 3
  ...

not ok 3 - timeout!
  ---
  expired: test/c.test.ts
  ...

# Subtest: test/d.test.ts
    1..0 # no tests found
ok 4 - test/d.test.ts # SKIP no tests found

# Subtest: test/e.test.ts
    ok 1 - done, but a handle keeps the process alive
    not ok 2 - timeout!
      ---
      expired: TAP
      test: TAP
      ...
    1..2
not ok 5 - test/e.test.ts # time=900000ms

# { total: 12, pass: 5, fail: 4, todo: 1, skip: 2 }
`;
  writeFileSync(join(dir, 'out.tap'), tap);
  const run = bash('tap_file_counts out.tap; tap_summary out.tap', dir);
  t.strictSame(run.stdout.trimEnd().split('\n'), [
    // <file> <passed> <failed> <skipped> <todo>
    'test/a.test.ts\t3\t1\t1\t1',
    'test/b.test.ts\t1\t1\t0\t0',
    'test/c.test.ts\t0\t1\t0\t0',
    'test/d.test.ts\t0\t0\t1\t0',
    'test/e.test.ts\t1\t1\t0\t0',
    '12 5 4 2 1',
  ]);
});

t.test('the quarantine is empty or well formed, and spares what must never be retried', async (t) => {
  const text = readFileSync(join(root, '.ci/quarantine'), 'utf8');
  t.match(text, /Never a test of loss, duplication, consent or isolation/, 'the header states the rule');
  const dir = tempDir(t);
  const run = bash(`CI_WORK="${dir}" CI_QUARANTINE=.ci/quarantine; ci_begin; cat "${dir}/quarantine" "${dir}/extra"`, root);
  const entries = run.stdout.split('\n').filter((l) => l !== '');
  t.strictSame(entries.filter((l) => !l.includes('\t')), [], 'every entry is well formed and names a file');
  const faults = readFileSync(join(root, 'docs/reliability.md'), 'utf8');
  for (const entry of entries) {
    const [path = '', , reason = ''] = entry.split('\t');
    t.notOk(faults.includes(path), `${path} is not a test of docs/reliability.md's faults`);
    t.notMatch(`${path} ${reason}`, /los[st]|dup|doubl|exactly-once|idempot|consent|opt-?(out|in)|isolat|order/i, `${path} tests no loss, duplication, consent or isolation`);
  }
});

t.test('the second pass runs every file that starts a gateway', async (t) => {
  const run = bash('gateway_test_files', root);
  const files = new Set(run.stdout.split('\n').filter((l) => l !== ''));
  for (const file of [
    'test/gateway/rate-limit.test.ts',
    'test/notifications/onesignal-client.test.ts',
    'test/notifications/api.test.ts',
    'test/query/readyz.test.ts',
    'test/query/deliveries.test.ts',
    'test/segments/segments.test.ts',
    'test/cluster/failover.test.ts',
    'test/e2e/broadcast.test.ts',
    'test/sql/listener.test.ts',
    'test/browser/dashboard.test.ts',
  ]) {
    t.ok(files.has(file), `${file} starts a gateway`);
  }
  for (const file of ['test/lua/contracts.test.ts', 'test/notifications/local-time.test.ts', 'test/clickhouse-server/query-suite.test.ts', 'test/repo/ci-run.test.ts']) {
    t.notOk(files.has(file), `${file} starts none`);
  }
});
