import { rmSync } from 'node:fs';
import t from 'tap';
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
