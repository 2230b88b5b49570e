import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));

/** Runs `ensure_node` of scripts/lib.sh with `PATH` as given. */
function ensureNode(path: string): Promise<{ code: number; stderr: string }> {
  return run('bash', ['-c', '. scripts/lib.sh && ensure_node'], { cwd: root, env: { ...process.env, PATH: path } }).then(
    (r) => ({ code: 0, stderr: r.stderr }),
    (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }),
  );
}

t.test("package.json's engines range is the one Node major scripts/lib.sh accepts", async (t) => {
  const { stdout } = await run('bash', ['-c', '. scripts/lib.sh && echo "$NODE_MAJOR"'], { cwd: root });
  const major = Number(stdout.trim());
  t.ok(Number.isInteger(major) && major > 0, `NODE_MAJOR is ${stdout.trim()}`);
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
  t.equal(pkg.engines.node, `>=${major} <${major + 1}`);
  t.equal(process.versions.node.split('.')[0], String(major), 'the tests run on it');
});

t.test('ensure_node accepts that major and refuses another with a message', async (t) => {
  t.equal((await ensureNode(process.env['PATH'] ?? '')).code, 0, 'the Node running the tests');
  const dir = mkdtempSync(join(tmpdir(), 'fake-node-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const fake = join(dir, 'node');
  writeFileSync(fake, '#!/bin/sh\ncase "$1" in -v) echo v22.3.0 ;; *) echo 22 ;; esac\n');
  chmodSync(fake, 0o755);
  const refused = await ensureNode(`${dir}:${process.env['PATH'] ?? ''}`);
  t.not(refused.code, 0);
  t.match(refused.stderr, /Node\.js 20 is required; found v22\.3\.0/);
});
