import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import t, { type Test } from 'tap';
import { hostEndpoint, openClickHouse } from '../../engine/infra/clickhouse/client.ts';
import { lastWords } from '../../engine/infra/clickhouse/host/spawn.ts';
import { EngineLockedError } from '../../engine/infra/clickhouse/lock-holder.ts';
import { ClickHouseStore } from '../../engine/infra/clickhouse/store.ts';
import { createLogger } from '../../engine/infra/process/log.ts';
import { TEST_CLICKHOUSE_URL } from '../clickhouse-server/database.ts';
import { eventually } from '../helpers/http.ts';

// The embedded engine's own process (docs/architecture.md, "ClickHouse: one client, two modes"):
// started again when it dies under a live store, and gone with the engine that started it.

const embeddedOnly = { skip: TEST_CLICKHOUSE_URL !== undefined && 'the embedded engine only' };

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function dataDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'ch-host-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

for (const sandbox of ['auto', 'off'] as const) {
  t.test(`a DATA_DIR relative to the engine's folder, as the default ./.data is (sandbox ${sandbox})`, embeddedOnly, async (t) => {
    // Under the engine's folder, as ./.data is: a path through '..' could lead back to the same place
    // from the host's folder too, and hide the fault.
    mkdirSync('.cache', { recursive: true });
    const within = mkdtempSync(join('.cache', 'ch-host-test-'));
    t.teardown(() => rmSync(within, { recursive: true, force: true }));
    const dir = resolve(within);
    const ch = await openClickHouse({ DATA_DIR: within, CLICKHOUSE_SANDBOX: sandbox });
    t.teardown(() => ch.close());
    await ch.command({ query: 'CREATE TABLE kept (n UInt8) ENGINE = MergeTree ORDER BY n' });
    await ch.insert({ table: 'kept', values: [{ n: 7 }], format: 'JSONEachRow' });
    const rows = await (await ch.query({ query: 'SELECT n FROM kept', format: 'JSONEachRow' })).json();
    t.same(rows, [{ n: 7 }], 'the host opens the data, and reads the insert files, where the engine put them');
    t.ok(readdirSync(join(dir, 'clickhouse')).length > 0, 'under DATA_DIR/clickhouse');
    t.notOk(existsSync(join(dir, 'clickhouse-host', within)), 'not under the host\'s own folder');
  });
}

t.test('a store whose ClickHouse process was killed starts it again on the next use', embeddedOnly, async (t) => {
  const store = new ClickHouseStore({ DATA_DIR: dataDir(t), CLICKHOUSE_SANDBOX: 'auto' }, createLogger('error'));
  t.teardown(() => store.close());
  const first = await store.get();
  await first.command({ query: 'CREATE TABLE kept (n UInt8) ENGINE = MergeTree ORDER BY n' });
  await first.command({ query: 'INSERT INTO kept VALUES (7)' });
  const killed = hostEndpoint(first)?.pid ?? 0;
  t.ok(alive(killed), `the ClickHouse process ${killed} runs`);
  process.kill(killed, 'SIGKILL');
  const again = await eventually('a new ClickHouse process', async () => {
    const ch = await store.get().catch(() => undefined);
    return ch && hostEndpoint(ch)?.pid !== killed ? ch : undefined;
  });
  const rows = await (await again.query({ query: 'SELECT n FROM kept', format: 'JSONEachRow' })).json();
  t.same(rows, [{ n: 7 }], 'the new one answers, on the same data');
});

t.test('the ClickHouse process ends with the engine that started it, even SIGKILLed', embeddedOnly, async (t) => {
  const dir = dataDir(t);
  const script = [
    "import { hostEndpoint, openClickHouse } from './engine/infra/clickhouse/client.ts';",
    `const ch = await openClickHouse({ DATA_DIR: ${JSON.stringify(dir)}, CLICKHOUSE_SANDBOX: 'auto' });`,
    'console.log(hostEndpoint(ch).pid);',
    'setInterval(() => {}, 1000);',
  ].join('\n');
  const engine = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] });
  const host = await new Promise<number>((resolve, reject) => {
    engine.stdout.setEncoding('utf8');
    engine.stdout.once('data', (line: string) => resolve(Number(line.trim())));
    engine.once('exit', (code) => reject(new Error(`the engine ended with ${code}`)));
  });
  t.ok(alive(host), `its ClickHouse process ${host} runs`);
  await t.rejects(openClickHouse({ DATA_DIR: dir, CLICKHOUSE_SANDBOX: 'auto' }), EngineLockedError, 'another process cannot open the data meanwhile');
  await t.rejects(openClickHouse({ DATA_DIR: dir, CLICKHOUSE_SANDBOX: 'auto' }), new RegExp(`held by process ${engine.pid}`), 'the error names the engine, not its ClickHouse process');
  engine.kill('SIGKILL');
  await eventually('the ClickHouse process gone', async () => (alive(host) ? undefined : true));
  const reopened = await eventually('the data free again', async () => openClickHouse({ DATA_DIR: dir, CLICKHOUSE_SANDBOX: 'auto' }).catch(() => undefined));
  t.teardown(() => reopened.close());
  t.same(await (await reopened.query({ query: 'SELECT 1 AS one', format: 'JSONEachRow' })).json(), [{ one: 1 }], 'and another engine opens it');
});

t.test("a host that ended before it answered: its start error names what it said", async (t) => {
  const crash = [
    'node:internal/modules/cjs/loader:1210',
    '  throw err;',
    '  ^',
    '',
    "Error: Cannot find module '/tmp/x/dist/engine/infra/clickhouse/host/main.js'",
    '    at Module._resolveFilename (node:internal/modules/cjs/loader:1207:15)',
    "  code: 'MODULE_NOT_FOUND',",
    '  requireStack: []',
    '}',
    '',
    'Node.js v20.20.2',
    '',
  ].join('\n');
  t.equal(lastWords(crash), "Error: Cannot find module '/tmp/x/dist/engine/infra/clickhouse/host/main.js'", "a crash of its node: the error line, not the stack's end");
  t.equal(lastWords('TypeError [ERR_INVALID_ARG_TYPE]: the "path" argument must be of type string\n    at open (node:fs:1)\n'), 'TypeError [ERR_INVALID_ARG_TYPE]: the "path" argument must be of type string', 'an error of any kind');
  t.equal(lastWords("bwrap: Can't find source path .data/clickhouse: No such file or directory\n"), "bwrap: Can't find source path .data/clickhouse: No such file or directory", 'the sandbox refusing: its line');
  t.equal(lastWords('one\ntwo\n\nthree\nfour\n'), 'two three four', 'anything else: the last three lines');
  t.equal(lastWords(''), '', 'nothing said');
});
