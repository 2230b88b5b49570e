import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout } from 'node:timers/promises';
import t from 'tap';
import { statusFileHolder } from '../../engine/clickhouse/lock-holder.ts';
import { runEngine, startEngine, testEnv } from '../helpers/engine.ts';
import { cleanupPrefix, testPrefix } from '../helpers/redis.ts';

t.test('engine migrate on the data directory of a running engine names that process and what to do', async (t) => {
  const prefix = testPrefix();
  const env = testEnv(prefix, { PARTITIONS: '2' });
  const engine = await startEngine(['recorder'], env);
  t.teardown(async () => {
    await engine.kill();
    await cleanupPrefix(prefix);
    rmSync(env['DATA_DIR'] ?? '', { recursive: true, force: true });
  });
  const run = await runEngine(['migrate'], env);
  t.equal(run.code, 1, 'exit status');
  t.match(run.stderr, `held by process ${engine.proc.pid} (`, 'names the process holding it');
  t.match(run.stderr, /bin\/(?:engine|main)\.js start --roles recorder/, "with its command line (the sources' bin or the build's)");
  t.match(run.stderr, /stop that process, or set CLICKHOUSE_URL/, 'says what to do');
  t.notMatch(run.stderr, /Cannot lock file|Failed to create connection/, "not chDB's own words");
  t.equal(run.stdout, '');

  const second = await runEngine(['start', '--roles', 'recorder', '--port', '0'], env);
  t.equal(second.code, 1, 'a second start on it fails too');
  t.match(second.stderr, `held by process ${engine.proc.pid}`);
});

t.test('where /proc/locks cannot tell, the live process named in the status file is the holder', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'engine-status-'));
  const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.teardown(() => {
    sleeper.kill();
    rmSync(dir, { recursive: true, force: true });
  });
  await once(sleeper, 'spawn');
  // Until the child has exec'd, its command line is still its parent's (or empty) on a busy host.
  for (let i = 0; i < 100 && !readFileSync(`/proc/${sleeper.pid}/cmdline`, 'utf8').startsWith('sleep'); i++) await setTimeout(20);
  writeFileSync(join(dir, 'status'), `PID: ${sleeper.pid}\nStarted at: 2026-01-01 00:00:00\nRevision: 54513\n`);
  t.same(statusFileHolder(dir), { pid: sleeper.pid, command: 'sleep 30' });
  writeFileSync(join(dir, 'status'), `PID: ${process.pid}\n`);
  t.equal(statusFileHolder(dir), undefined, 'never this process');
});
