import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { deployment } from '../helpers/engine.ts';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));

// The `engine` command runs the JavaScript build; it must carry every file the engine reads at
// run time (Lua scripts, migrations, queries, the package version).
t.test('the build runs without the TypeScript loader: help, a project, migrations', async (t) => {
  const out = join(root, '.tap', `build-${process.pid}`);
  t.teardown(() => rmSync(out, { recursive: true, force: true }));
  await run('bash', [join(root, 'scripts/build.sh'), out], { cwd: root });
  const main = join(out, 'bin/main.js');
  const d = await deployment(t);
  const env = { ...process.env, ...d.env };

  const help = await run(process.execPath, [main, 'help'], { env });
  t.match(help.stdout + help.stderr, /engine start/, 'help answers');

  const created = await run(process.execPath, [main, 'project', 'create', 'built', '--json'], { env });
  t.match(JSON.parse(created.stdout) as Record<string, unknown>, { project_id: String, sdk_key: String }, 'a project is created (Lua scripts loaded)');

  const dataDir = mkdtempSync(join(tmpdir(), 'engine-build-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const migrated = await run(process.execPath, [main, 'migrate'], { env: { ...env, DATA_DIR: dataDir } });
  t.match(migrated.stdout + migrated.stderr, /migrat/i, 'migrations apply from the build');
});
