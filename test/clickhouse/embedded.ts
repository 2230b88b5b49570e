import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { openClickHouse, type ClickHouse } from '../../engine/infra/clickhouse/client.ts';
import { testDatabase } from '../clickhouse-server/database.ts';

/**
 * The store of a test: the embedded engine under a fresh DATA_DIR or, with TEST_CLICKHOUSE_URL
 * set, a fresh database on that server; closed and removed when the test ends. chDB binds one
 * data directory per process, so a test file opens it once and shares it between subtests.
 */
export async function testClickHouse(t: Test): Promise<ClickHouse> {
  const dataDir = mkdtempSync(join(tmpdir(), 'engine-ch-'));
  const database = await testDatabase();
  const ch = await openClickHouse({ DATA_DIR: dataDir, CLICKHOUSE_SANDBOX: 'auto', ...database.env });
  t.teardown(async () => {
    await ch.close();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return ch;
}

/** Runs a query with parameters and returns its rows. */
export async function rows<T>(ch: ClickHouse, query: string, params: Record<string, unknown> = {}): Promise<T[]> {
  const result = await ch.query({ query, query_params: params, format: 'JSONEachRow' });
  return result.json<T>();
}

/** Drops every table of the current database, so a subtest starts from an empty store. */
export async function dropAllTables(ch: ClickHouse): Promise<void> {
  const tables = await rows<{ name: string }>(ch, 'SELECT name FROM system.tables WHERE database = currentDatabase()');
  for (const { name } of tables) await ch.command({ query: 'DROP TABLE IF EXISTS {table:Identifier}', query_params: { table: name } });
}
