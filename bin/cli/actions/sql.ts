import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../../schemas/config.ts';
import { hostEndpoint, openClickHouse } from '../../../engine/infra/clickhouse/client.ts';
import { EngineLockedError, embeddedLockHolder } from '../../../engine/infra/clickhouse/lock-holder.ts';
import { SqlError } from '../../../gateway/sql/errors.ts';
import { sqlLimits } from '../../../gateway/sql/limits.ts';
import { runOperatorQuery } from '../../../gateway/sql/operator-query.ts';
import { sqlBackend } from '../../../gateway/sql/server.ts';

/** How long the running engine's listener has to answer /ping before the data is opened directly. */
const PING_MS = 1000;

/**
 * What `engine sql` does: prints the answer on stdout, 0; or ClickHouse's error on stderr, 1. With
 * SQL_KEY set and a listener answering on SQL_HOST:SQL_PORT, the query goes there; otherwise this
 * process opens the engine's ClickHouse itself (the embedded engine's own process on its data
 * directory, which no other process may hold then, or CLICKHOUSE_URL), with the listener's
 * allowlist, limits and read-only setting.
 */
export async function runSql(config: Config, query: string, format: string): Promise<number> {
  const listener = await listenerUrl(config);
  if (listener !== undefined && config.SQL_KEY !== undefined) return throughListener(listener, config.SQL_KEY, query, format);
  if (config.CLICKHOUSE_URL === undefined) {
    const path = join(config.DATA_DIR, 'clickhouse');
    if (!existsSync(path)) {
      console.error(`engine: no ClickHouse data in ${path}`);
      return 1;
    }
    const holder = embeddedLockHolder(path);
    if (holder) {
      console.error(`engine: ${new EngineLockedError(path, holder).message}; or set SQL_KEY to an operator key to query through its SQL listener`);
      return 1;
    }
  }
  const ch = config.CLICKHOUSE_URL === undefined ? await openClickHouse(config) : undefined;
  const backend = sqlBackend(config, ch && hostEndpoint(ch));
  try {
    const request = { sql: query, defaultFormat: format, database: undefined, queryId: randomUUID(), settings: [], params: [] };
    const answer = await runOperatorQuery(backend, request, sqlLimits(config).limits);
    process.stdout.write(answer.body);
    return 0;
  } catch (err) {
    if (!(err instanceof SqlError)) throw err;
    process.stderr.write(err.body(backend.version()));
    return 1;
  } finally {
    await ch?.close();
  }
}

/** The listener's base URL when SQL_KEY is set and a listener answers there. */
async function listenerUrl(config: Config): Promise<string | undefined> {
  if (config.SQL_KEY === undefined || config.SQL_PORT === 0) return undefined;
  const host = ['0.0.0.0', '::'].includes(config.SQL_HOST) ? '127.0.0.1' : config.SQL_HOST;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${config.SQL_PORT}`;
  try {
    const ping = await fetch(`${url}/ping`, { signal: AbortSignal.timeout(PING_MS) });
    return (await ping.text()) === 'Ok.\n' ? url : undefined;
  } catch {
    return undefined;
  }
}

async function throughListener(url: string, key: string, query: string, format: string): Promise<number> {
  const target = new URL('/', url);
  target.searchParams.set('default_format', format);
  const answer = await fetch(target, { method: 'POST', body: query, headers: { 'X-ClickHouse-Key': key } });
  const body = new Uint8Array(await answer.arrayBuffer());
  if (answer.ok) {
    process.stdout.write(body);
    return 0;
  }
  process.stderr.write(body);
  return 1;
}
