import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { openClickHouse } from '../../engine/infra/clickhouse/client.ts';
import { insertRows } from '../../engine/infra/clickhouse/insert.ts';
import { loadMigrations } from '../../engine/infra/clickhouse/migrations.ts';
import { loadConfig } from '../../engine/infra/process/config.ts';
import { TEST_CLICKHOUSE_URL, testDatabase } from '../clickhouse-server/database.ts';
import { runEngine, testEnv } from '../helpers/engine.ts';

// `engine migrate` touches no Redis key; the prefix only satisfies testEnv.
const env = testEnv('clickhouse-cli:');
t.teardown(() => rmSync(env['DATA_DIR'] ?? '', { recursive: true, force: true }));

/** `env` on a fresh database of TEST_CLICKHOUSE_URL, or as it is (embedded). */
async function storeEnv(t: Test): Promise<Record<string, string>> {
  const database = await testDatabase();
  t.teardown(database.drop);
  return { ...env, ...database.env };
}

t.test('engine migrate prints the versions it applied, then that none are pending', async (t) => {
  const store = await storeEnv(t);
  const first = await runEngine(['migrate'], store);
  t.equal(first.code, 0, first.stderr);
  t.same(
    first.stdout.trim().split('\n'),
    loadMigrations().map((m) => `applied ${String(m.version).padStart(4, '0')}_${m.name}`),
  );
  const second = await runEngine(['migrate'], store);
  t.equal(second.code, 0, second.stderr);
  t.equal(second.stdout.trim(), 'no migrations pending');
});

t.test('engine migrate waits for the projections it materializes over stored rows, with their progress on stderr', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'engine-migrate-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const store = { ...(await storeEnv(t)), DATA_DIR: dataDir };
  // A store as migration 0007 left it, holding a million delivery records.
  const ch = await openClickHouse(loadConfig(store));
  try {
    for (const m of loadMigrations().filter((m) => m.version <= 7)) {
      for (const query of m.statements) await ch.command({ query });
      await insertRows(ch, 'schema_migrations', [{ version: m.version, name: m.name, checksum: m.checksum }], `schema_migrations:${m.version}`);
    }
    await ch.command({
      query: `INSERT INTO message_deliveries (project, id, stream_id, notification_id, external_id, channel, attempt, status, retrying, at)
        SELECT 'p', concat('d', toString(number)), concat(toString(number), '-0'), 'n', concat('u', toString(number % 1000)), 'PUSH', 1, 'sent', false,
          fromUnixTimestamp64Milli(toInt64(1790000000000 + number * 1000), 'UTC')
        FROM numbers(1000000) SETTINGS insert_deduplication_token = ''`,
    });
  } finally {
    await ch.close();
  }
  const run = await runEngine(['migrate'], store);
  t.equal(run.code, 0, run.stderr);
  t.same(
    run.stdout.trim().split('\n'),
    loadMigrations()
      .filter((m) => m.version > 7)
      .map((m) => `applied ${String(m.version).padStart(4, '0')}_${m.name}`),
  );
  t.match(run.stderr, /rewriting message_deliveries: \(MATERIALIZE PROJECTION by_user\), \d+ part\(s\) left/, 'progress');
  t.match(run.stderr, /background rewrites done\s*$/, 'and its end');
  const again = await runEngine(['migrate'], store);
  t.equal(again.stdout.trim(), 'no migrations pending');
  t.notMatch(again.stderr, /rewriting/, 'nothing left to rewrite');
});

t.test('a ClickHouse server that cannot be reached is a message and exit 1', async (t) => {
  const run = await runEngine(['migrate'], { ...env, CLICKHOUSE_URL: 'http://127.0.0.1:1' });
  t.equal(run.code, 1);
  t.match(run.stderr, /engine: migrate failed on ClickHouse \(http:\/\/127\.0\.0\.1:1\)/);
});

t.test('an embedded store that cannot be opened is a message and exit 1', { skip: TEST_CLICKHOUSE_URL === undefined ? false : 'embedded engine only' }, async (t) => {
  const file = join(env['DATA_DIR'] ?? '', 'not-a-directory');
  writeFileSync(file, '');
  const run = await runEngine(['migrate'], { ...env, DATA_DIR: file });
  t.equal(run.code, 1);
  t.match(run.stderr, /engine: migrate failed on ClickHouse \(embedded .*not-a-directory\/clickhouse\)/);
});

t.test('engine migrate takes no arguments', async (t) => {
  const run = await runEngine(['migrate', 'extra'], env);
  t.equal(run.code, 2);
});

t.test("the client's own errors reach our structured logger", async (t) => {
  const lines: { msg: string; fields: Record<string, unknown> | undefined }[] = [];
  const capture = (msg: string, fields?: Record<string, unknown>): void => {
    lines.push({ msg, fields });
  };
  const ch = await openClickHouse({ CLICKHOUSE_URL: 'http://127.0.0.1:1', CLICKHOUSE_SANDBOX: 'auto', DATA_DIR: env['DATA_DIR'] ?? '' }, {
    debug: capture,
    info: capture,
    warn: capture,
    error: capture,
  });
  t.teardown(() => ch.close());
  await t.rejects(ch.query({ query: 'SELECT 1' }), /ECONNREFUSED/);
  t.ok(
    lines.some((l) => l.msg.startsWith('clickhouse: ') && l.fields?.['err'] instanceof Error),
    'one line names the failure with its error',
  );
});
