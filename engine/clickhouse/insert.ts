import type { ClickHouse } from './client.ts';

/**
 * Inserts rows (JSONEachRow) as one block. `token` is the insert deduplication token: a block
 * inserted again with the same token into a table with `non_replicated_deduplication_window` is
 * dropped, which is how a redelivered batch lands once. An empty token means none; it is still
 * sent because the embedded engine keeps the previous call's token for the session otherwise,
 * and a later unrelated insert would be silently dropped as its duplicate.
 */
export async function insertRows(ch: ClickHouse, table: string, rows: readonly object[], token = ''): Promise<void> {
  if (rows.length === 0) return;
  await ch.insert({
    table,
    values: rows as object[],
    format: 'JSONEachRow',
    clickhouse_settings: { insert_deduplication_token: token },
  });
}
