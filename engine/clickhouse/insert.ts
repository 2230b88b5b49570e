import { Readable } from 'node:stream';
import { rawJsonInsert, type ClickHouse } from './client.ts';

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

/**
 * Inserts rows given as JSON text, one object per element (JSONEachRow), as one block with the
 * deduplication token `token` (see insertRows). The text goes to ClickHouse as it is: callers
 * that already hold each row's JSON (the recorder) skip building and encoding objects again.
 */
export async function insertJsonLines(ch: ClickHouse, table: string, lines: readonly string[], token: string): Promise<void> {
  if (lines.length === 0) return;
  const raw = rawJsonInsert(ch);
  if (raw) {
    await raw(table, Buffer.from(lines.join('\n')), { insert_deduplication_token: token });
    return;
  }
  await ch.insert({
    table,
    values: Readable.from([lines.join('\n')]),
    format: 'JSONEachRow',
    clickhouse_settings: { insert_deduplication_token: token },
  });
}
