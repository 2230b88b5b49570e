import t from 'tap';
import { loadMigrations, migrate } from '../../engine/infra/clickhouse/migrations.ts';
import { dropAllTables, testClickHouse, rows } from './embedded.ts';

const ch = await testClickHouse(t);
const all = loadMigrations();

interface Recorded {
  version: number;
  name: string;
  checksum: string;
}
const recorded = (): Promise<Recorded[]> =>
  rows<Recorded>(ch, 'SELECT version, name, checksum FROM schema_migrations FINAL ORDER BY version');
const rawCount = async (): Promise<number> =>
  Number((await rows<{ n: string }>(ch, 'SELECT count() AS n FROM schema_migrations'))[0]?.n);
const expected = all.map((m) => ({ version: m.version, name: m.name, checksum: m.checksum }));

t.test('the migration files are numbered from 1 without gaps and each has statements', async (t) => {
  t.same(
    all.map((m) => m.version),
    all.map((_, i) => i + 1),
  );
  t.ok(all.length >= 5, 'ledger, message_deliveries, receipts, events, users');
  for (const m of all) t.ok(m.statements.length > 0, `${m.name} has a statement`);
  t.equal(loadMigrations(), all, 'files are read once per process');
});

t.test('a fresh store gets every migration, in order, recorded in the ledger', async (t) => {
  await dropAllTables(ch);
  const applied = await migrate(ch);
  t.same(
    applied.map((m) => m.version),
    all.map((m) => m.version),
    'applied in version order',
  );
  t.same(await recorded(), expected);
  const tables = await rows<{ name: string }>(ch, 'SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY name');
  t.same(
    tables.map((r) => r.name),
    ['events', 'message_deliveries', 'message_deliveries_in', 'message_deliveries_in_mv', 'receipts', 'schema_migrations', 'users', 'webhook_attempts'],
  );
});

t.test('running the migrations again is a no-op', async (t) => {
  const before = await rows<Recorded & { applied_at: string }>(ch, 'SELECT * FROM schema_migrations ORDER BY version');
  t.same(await migrate(ch), [], 'nothing pending');
  t.same(await rows(ch, 'SELECT * FROM schema_migrations ORDER BY version'), before, 'the ledger rows are unchanged');
});

t.test('two runners at once end with every migration applied and recorded once', async (t) => {
  await dropAllTables(ch);
  const [a, b] = await Promise.all([migrate(ch), migrate(ch)]);
  t.ok(a.length + b.length >= all.length, 'between them the runners applied everything');
  t.same(await recorded(), expected);
  t.equal(await rawCount(), all.length, 'the ledger insert of a racing runner was deduplicated');
  t.same(await migrate(ch), [], 'a third run finds nothing pending');
});

t.test('a ledger from before checksums left comments out is accepted, reworded comments included', async (t) => {
  const [second] = all.slice(1);
  const ninth = all.find((m) => m.version === 9);
  for (const m of [second, ninth]) {
    await ch.command({
      query: 'ALTER TABLE schema_migrations UPDATE checksum = {c:String} WHERE version = {v:UInt32}',
      query_params: { c: m?.earlier.at(-1) ?? '', v: m?.version ?? 0 },
      clickhouse_settings: { mutations_sync: '1' },
    });
  }
  t.same(await migrate(ch), [], 'nothing pending, nothing refused');
});

t.test('a migration whose applied version was edited is refused', async (t) => {
  await ch.command({
    query: 'ALTER TABLE schema_migrations UPDATE checksum = {c:String} WHERE version = {v:UInt32}',
    query_params: { c: 'edited', v: 2 },
    clickhouse_settings: { mutations_sync: '1' },
  });
  await t.rejects(migrate(ch), /migration 2 \(message_deliveries\) changed after it was applied/);
});
