import type { Config } from '../../schemas/config.ts';
import type { HostEndpoint } from '../clickhouse/client.ts';
import { ServerSql } from './server.ts';

/**
 * What a backend runs: one statement, already allowed (./operator-query.ts), in the engine's
 * database, with its settings (limits and readonly already chosen).
 */
export interface SqlQuery {
  sql: string;
  /** The format when the query names none. */
  defaultFormat: string | undefined;
  queryId: string;
  settings: readonly (readonly [string, string])[];
  params: readonly (readonly [string, string])[];
}

export interface SqlAnswer {
  /** The rows, written by the engine in their format. */
  body: Uint8Array;
  format: string | undefined;
  /** The X-ClickHouse-Summary header's value (JSON). */
  summary: string;
}

/**
 * Where queries run: a ClickHouse server (./server.ts), the engine's own process of the embedded
 * engine included (engine/clickhouse/host/).
 * run() throws an SqlError with ClickHouse's code and text when the engine refuses the query.
 */
export interface SqlBackend {
  run(query: SqlQuery): Promise<SqlAnswer>;
  /** The engine's version for the error texts the listener writes itself, once known. */
  version(): string;
}

/**
 * The engine's own ClickHouse: its server, as the user of SQL_CLICKHOUSE_URL when one is set
 * (docs/sql.md, "In front of a ClickHouse server"), or the embedded engine's process, `host`.
 */
export function sqlBackend(config: Pick<Config, 'CLICKHOUSE_URL' | 'SQL_CLICKHOUSE_URL'>, host: HostEndpoint | undefined): SqlBackend {
  if (config.CLICKHOUSE_URL !== undefined) return new ServerSql(config.SQL_CLICKHOUSE_URL ?? config.CLICKHOUSE_URL);
  if (host === undefined) throw new Error('the embedded engine is not open: no host to query');
  return ServerSql.onHost(host);
}
