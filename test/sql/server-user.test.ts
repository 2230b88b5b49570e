import { createClient } from '@clickhouse/client';
import t from 'tap';
import { TEST_CLICKHOUSE_URL, testDatabase } from '../clickhouse-server/database.ts';
import { sqlCall, sqlEngine } from './engine.ts';

// In front of a ClickHouse server, the listener's queries go as the user of SQL_CLICKHOUSE_URL,
// and to its database, while the recorder writes with CLICKHOUSE_URL (docs/sql.md, "In front of
// a ClickHouse server"). The stand-in has no users: the database tells which URL a query used.

t.test('the SQL listener queries the server of SQL_CLICKHOUSE_URL', { skip: TEST_CLICKHOUSE_URL === undefined && 'a ClickHouse server only (the server-mode suite)' }, async (t) => {
  const operators = await testDatabase();
  t.teardown(() => operators.drop());
  const url = operators.env.CLICKHOUSE_URL ?? '';
  const client = createClient({ url });
  t.teardown(() => client.close());
  await client.command({ query: "CREATE TABLE events (project String, external_id String) ENGINE = MergeTree ORDER BY project" });
  await client.command({ query: "INSERT INTO events VALUES ('p', 'seen through SQL_CLICKHOUSE_URL')" });
  const s = await sqlEngine(t, { SQL_CLICKHOUSE_URL: url });
  const answer = await sqlCall(s.sqlUrl, { query: 'SELECT external_id FROM events' }, { headers: { 'X-ClickHouse-Key': s.operatorKey } });
  t.equal(answer.text, 'seen through SQL_CLICKHOUSE_URL\n', "the listener read the database of SQL_CLICKHOUSE_URL, not the recorder's");
  const named = await sqlCall(s.sqlUrl, { query: 'SELECT count() FROM events', database: new URL(url).pathname.slice(1) }, { headers: { 'X-ClickHouse-Key': s.operatorKey } });
  t.equal(named.text, '1\n', 'and takes its name as the engine database');
});
