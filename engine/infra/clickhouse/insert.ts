import { randomUUID } from 'node:crypto';
import { unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { insertInbox, type ClickHouse } from './client.ts';
import { stringLiteral } from './literal.ts';

/**
 * Inserts rows (JSONEachRow) as one block under the deduplication token `token`. An empty token
 * means none, and is still sent: the embedded engine would otherwise keep the previous call's
 * token and drop a later, unrelated insert. See docs/architecture.md, "ClickHouse: one client,
 * two modes".
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
 * Settings of insertJsonLines: the text must fit the table exactly, is written before the call
 * returns, and views deduplicate by the token too. Parallel parsing was slower on 10k-row batches.
 */
const JSON_LINES_SETTINGS = {
  input_format_skip_unknown_fields: 0,
  input_format_null_as_default: 0,
  input_format_parallel_parsing: 0,
  async_insert: 0,
  deduplicate_blocks_in_dependent_materialized_views: 1,
} as const;

/** JSON_LINES_SETTINGS as a SETTINGS clause (fixed names and numbers), written once. */
const JSON_LINES_SETTINGS_SQL = Object.entries(JSON_LINES_SETTINGS)
  .map(([name, value]) => `${name} = ${value}`)
  .join(', ');


/**
 * Inserts JSONEachRow text as one block with the deduplication token `token` (see insertRows),
 * checked strictly (JSON_LINES_SETTINGS). The text goes to ClickHouse as it is: the recorder
 * hands over its outcome entries without parsing them. The embedded engine reads it from a file
 * of its inbox (INSERT ... FROM INFILE); a server gets it as the request body.
 */
export async function insertJsonLines(ch: ClickHouse, table: string, lines: Buffer, token: string): Promise<void> {
  if (lines.length === 0) return;
  const inbox = insertInbox(ch);
  if (inbox === undefined) {
    // insert() would JSON-encode each chunk of a stream for a JSON format (a Buffer becoming
    // {"type":"Buffer",...}), so the text goes as the body of an exec, byte for byte.
    const { stream } = await ch.exec({
      query: `INSERT INTO ${table} FORMAT JSONEachRow`,
      values: Readable.from([lines], { objectMode: false }),
      clickhouse_settings: { ...JSON_LINES_SETTINGS, insert_deduplication_token: token },
    });
    stream.resume();
    await finished(stream);
    return;
  }
  const file = join(inbox, `${randomUUID()}.jsonl`);
  await writeFile(file, lines);
  try {
    await ch.command({
      query: `INSERT INTO ${table} FROM INFILE ${stringLiteral(file)} SETTINGS ${JSON_LINES_SETTINGS_SQL}, insert_deduplication_token = {token:String} FORMAT JSONEachRow`,
      query_params: { token },
    });
  } finally {
    // unlink, not rm: no lstat first, on every insert of the recorder.
    await unlink(file).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }
}
