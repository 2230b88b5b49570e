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
 * Where queries run: a ClickHouse server (./server.ts, which also chooses one: sqlBackend), the engine's own process of the embedded
 * engine included (engine/infra/clickhouse/host/).
 * run() throws an SqlError with ClickHouse's code and text when the engine refuses the query.
 */
export interface SqlBackend {
  run(query: SqlQuery): Promise<SqlAnswer>;
  /** The engine's version for the error texts the listener writes itself, once known. */
  version(): string;
}
