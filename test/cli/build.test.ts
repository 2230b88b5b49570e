import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import t from 'tap';
import { budgets } from '../../sdk/web/bundle.ts';
import { freshBuild } from '../../bench/engine-build.ts';
import { deployment, startEngine } from '../helpers/engine.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const guard = join(root, 'test/helpers/import-guard.js');
/** Development packages: a production install has neither, so the build must not import them. */
const devOnly = 'tsx,esbuild';
/** What only some commands need; help and usage errors load none of it. */
const heavy = ['uWebSockets.js', 'ioredis', 'undici', '@clickhouse/client', 'chdb', 'web-push', 'esbuild', 'ajv', 'typebox'];

// The `engine` command runs the JavaScript build; it must carry every file the engine reads at
// run time (Lua scripts, migrations, queries, the dashboard's bundle, the package version) and run
// where development packages are not installed: every run below goes through a module hook that
// fails to find tsx and esbuild (test/helpers/import-guard.js).
// `make test` builds dist/ before the suite; run alone on changed sources, the file builds its own.
const fresh = freshBuild();
const out = fresh === null ? join(root, '.tap', `build-${process.pid}`) : dirname(dirname(fresh));
if (fresh === null) {
  t.teardown(() => rmSync(out, { recursive: true, force: true }));
  t.before(() => run('bash', [join(root, 'scripts/build.sh'), out], { cwd: root }));
}
const main = (): string => join(out, 'bin/main.js');
const guarded = (): string[] => ['--import', guard, main()];

t.test('the build runs without the TypeScript loader or esbuild: help, a project, migrations', async (t) => {
  const d = await deployment(t);
  const env = { ...process.env, ...d.env, IMPORT_GUARD_REFUSE: devOnly };

  const help = await run(process.execPath, [...guarded(), 'help'], { env });
  t.match(help.stdout + help.stderr, /engine start/, 'help answers');

  const created = await run(process.execPath, [...guarded(), 'project', 'create', 'built', '--json'], { env });
  t.match(JSON.parse(created.stdout) as Record<string, unknown>, { project_id: String, sdk_key: String }, 'a project is created (Lua scripts loaded)');

  const dataDir = mkdtempSync(join(tmpdir(), 'engine-build-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const migrated = await run(process.execPath, [...guarded(), 'migrate'], { env: { ...env, DATA_DIR: dataDir } });
  t.match(migrated.stdout + migrated.stderr, /migrat/i, 'migrations apply from the build');
});

t.test('the built gateway serves the dashboard bundled at build time, without esbuild', async (t) => {
  const d = await deployment(t);
  const engine = await startEngine(['gateway'], { ...d.env, IMPORT_GUARD_REFUSE: devOnly }, guarded());
  t.teardown(() => engine.kill());
  const page = await fetch(`${engine.url}/dashboard`);
  t.equal(page.status, 200, 'the page');
  const html = await page.text();
  const script = /src="\/dashboard\/assets\/(main-[A-Z0-9]+\.js)"/.exec(html)?.[1];
  t.ok(script, 'it names its hashed script');
  t.ok(readdirSync(join(out, 'gateway/dashboard/bundle')).includes(script ?? ''), 'the one the build wrote');
  const asset = await fetch(`${engine.url}/dashboard/assets/${script}`);
  t.equal(asset.status, 200, 'the script is served');
  t.match(asset.headers.get('content-type'), /javascript/);
  t.ok((await asset.text()).length > 1000, 'with its content');
  t.equal(await engine.stop(), 0, 'it stops on SIGTERM');
});

t.test('the built gateway serves the web SDK, within its size budgets, and its demo page', async (t) => {
  const d = await deployment(t);
  const engine = await startEngine(['gateway'], { ...d.env, IMPORT_GUARD_REFUSE: devOnly }, guarded());
  t.teardown(() => engine.kill());
  for (const [name, budget] of Object.entries(budgets)) {
    const file = await fetch(`${engine.url}/sdk/${name}`);
    t.equal(file.status, 200, `${name} is served`);
    t.match(file.headers.get('content-type'), /javascript/);
    const gz = gzipSync(await file.text()).length;
    t.ok(gz <= budget, `${name}: ${gz} bytes gzipped, budget ${budget}`);
  }
  const worker = await fetch(`${engine.url}/sdk/web-sw.js`);
  t.equal(worker.headers.get('service-worker-allowed'), '/', 'the worker may control the whole origin');
  t.match(await (await fetch(`${engine.url}/sdk/web.mjs`)).text(), /export\s*\{/, 'the ES module exports');
  const demo = await (await fetch(`${engine.url}/demo`)).text();
  t.match(demo, /src="\/sdk\/web\.js"/, 'the demo page loads the SDK');
  t.equal((await fetch(`${engine.url}/sdk/nope.js`)).status, 404, 'an unknown file is 404');
  t.equal(await engine.stop(), 0);
});

t.test("the web SDK build prints each file's size against its budget", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'web-sdk-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { stdout } = await run(process.execPath, ['--import', 'tsx', join(root, 'sdk/web/build.ts'), dir], { cwd: root });
  t.match(stdout, /web SDK web\.js: [\d.]+ KB minified, [\d.]+ KB gzipped \(budget 12 KB\)/);
  t.match(stdout, /web SDK web-sw\.js: [\d.]+ KB minified, [\d.]+ KB gzipped \(budget 6 KB\)/);
  t.notMatch(stdout, /OVER/);
  t.same(readdirSync(dir).sort(), ['demo.js', 'web-sw.js', 'web.js', 'web.mjs']);
});

t.test('no file of the build imports a development package', async (t) => {
  const imports = /\b(?:from|import|import\(|require\()\s*['"](?:tsx|esbuild)(?:\/[^'"]*)?['"]/;
  const offenders = readdirSync(out, { recursive: true, withFileTypes: true })
    .filter((f) => f.isFile() && f.name.endsWith('.js'))
    .map((f) => join(f.parentPath, f.name))
    .filter((file) => imports.test(readFileSync(file, 'utf8')));
  t.same(offenders, []);
});

t.test('help and usage errors load none of the packages the commands use', async (t) => {
  for (const argv of [['--help'], ['help'], ['keys', 'create', '--help'], [], ['launch'], ['keys', 'create', 'p1']]) {
    const dir = mkdtempSync(join(tmpdir(), 'engine-imports-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const record = join(dir, 'modules');
    const result = await run(process.execPath, [...guarded(), ...argv], { env: { ...process.env, IMPORT_GUARD_RECORD: record } }).catch(
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    const name = `engine ${argv.join(' ')}`;
    t.match(result.stdout + result.stderr, /usage:\n {2}engine /, `${name}: prints the usage`);
    const loaded = readFileSync(record, 'utf8');
    t.match(loaded, /bin\/cli\/main\.js/, `${name}: the record holds the modules it loaded`);
    t.same(heavy.filter((pkg) => loaded.includes(`/node_modules/${pkg}/`)), [], `${name}: none of ${heavy.join(', ')}`);
  }
});
