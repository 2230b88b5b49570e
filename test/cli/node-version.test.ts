import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));

/** Runs `ensure_node` of scripts/lib.sh with a stand-in `node` that reports the given version. */
async function ensureNodeWith(version: string): Promise<{ code: number; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'fake-node-'));
  try {
    const fake = join(dir, 'node');
    writeFileSync(fake, `#!/bin/sh\ncase "$1" in -v) echo v${version} ;; *) echo ${version.split('.')[0]} ;; esac\n`);
    chmodSync(fake, 0o755);
    return await run('bash', ['-c', '. scripts/lib.sh && ensure_node'], { cwd: root, env: { ...process.env, PATH: `${dir}:${process.env['PATH'] ?? ''}` } }).then(
      (r) => ({ code: 0, stderr: r.stderr }),
      (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function libValue(name: string): Promise<string> {
  const { stdout } = await run('bash', ['-c', `. scripts/lib.sh && echo "$${name}"`], { cwd: root });
  return stdout.trim();
}

t.test("package.json's engines lists the Node lines scripts/lib.sh accepts", async (t) => {
  const majors = (await libValue('NODE_MAJORS')).split(' ');
  t.same(majors, ['20', '22', '24', '26']);
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
  t.equal(pkg.engines.node, majors.map((m) => `^${m}`).join(' || '));
  t.ok(majors.includes(process.versions.node.split('.')[0] ?? ''), 'the tests run on one of them');
  t.equal(await libValue('NEWEST_NODE_MAJOR'), majors.at(-1), "CI's second pass runs on the newest");
});

t.test('ensure_node accepts each maintained line and refuses others with a message', async (t) => {
  for (const version of ['20.19.0', '22.3.0', '24.21.0', '26.12.1']) {
    t.equal((await ensureNodeWith(version)).code, 0, `v${version}`);
  }
  for (const version of ['18.20.4', '21.7.3']) {
    const refused = await ensureNodeWith(version);
    t.not(refused.code, 0, `v${version} refused`);
    t.match(refused.stderr, new RegExp(`Node\\.js 20, 22, 24 or 26 is required; found v${version.replace(/\./g, '\\.')}`));
  }
});
