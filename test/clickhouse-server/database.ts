import { randomBytes } from 'node:crypto';
import { createClient } from '@clickhouse/client';

/**
 * The ClickHouse server the store and recorder suites run against, when set: the stand-in of
 * test/clickhouse-server/*-suite.test.ts, or a real server. Unset, they use the embedded engine.
 */
export const TEST_CLICKHOUSE_URL = process.env['TEST_CLICKHOUSE_URL'];

export interface TestDatabase {
  /** `{ CLICKHOUSE_URL }` of a fresh database in server mode; empty (embedded) otherwise. */
  env: { CLICKHOUSE_URL?: string };
  /** Drops the database; call it once nothing uses it any more. */
  drop(): Promise<void>;
}

/**
 * In server mode, a database of its own for one test (the URL's path names it, which
 * @clickhouse/client sends as `database`), so tests sharing a server never see each other's rows.
 */
export async function testDatabase(): Promise<TestDatabase> {
  if (TEST_CLICKHOUSE_URL === undefined) return { env: {}, drop: async () => {} };
  const server = new URL(TEST_CLICKHOUSE_URL);
  const name = `test_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  await onServer(server, `CREATE DATABASE ${name}`);
  const url = new URL(`/${name}`, server);
  return { env: { CLICKHOUSE_URL: url.toString() }, drop: () => onServer(server, `DROP DATABASE IF EXISTS ${name} SYNC`) };
}

async function onServer(url: URL, query: string): Promise<void> {
  const ch = createClient({ url: url.toString() });
  try {
    await ch.command({ query });
  } finally {
    await ch.close();
  }
}
