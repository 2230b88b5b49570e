import { createRequire } from 'node:module';
import type { Session } from 'chdb';
import type { SqlAnswer, SqlBackend, SqlQuery } from './backend.ts';
import { fromEngine, sqlErrors } from './errors.ts';
import { stringLiteral } from './statement.ts';

const require = createRequire(import.meta.url);
const SETTING_NAME = /^[A-Za-z_]\w*$/;

/**
 * Queries on the embedded engine, in the process that holds its data directory. Each query gets a
 * chDB session of its own, so its database, settings and parameters are its own: chDB keeps a
 * SET for the session, and the engine's client must never inherit `readonly`. Parameters go in
 * as `param_<name>` settings, never through chDB's bound-parameter call, which chDB runs one at a
 * time for the whole process: a 30 s scan there would hold every query of the gateway and the
 * recorder behind it. A session's queries run on libuv's worker threads, off the event loop
 * (docs/sql.md, "What a query costs the engine").
 */
export class EmbeddedSql implements SqlBackend {
  private readonly Session: typeof import('chdb').Session;
  private readonly engineVersion: string;

  constructor(private readonly path: string) {
    const chdb = require('chdb') as typeof import('chdb');
    this.Session = chdb.Session;
    this.engineVersion = chdb.version().libchdb;
  }

  version(): string {
    return this.engineVersion;
  }

  async run(query: SqlQuery): Promise<SqlAnswer> {
    const started = process.hrtime.bigint();
    const format = query.defaultFormat ?? 'TabSeparated';
    let session: Session | undefined;
    try {
      session = new this.Session(this.path);
      await session.queryAsync(prelude(query));
      const result = await session.queryAsync(query.sql, { format });
      const body = result.bytes();
      const summary = {
        read_rows: String(result.rowsRead),
        read_bytes: String(result.bytesRead),
        written_rows: '0',
        written_bytes: '0',
        total_rows_to_read: '0',
        result_rows: String(result.rowsRead),
        result_bytes: String(body.length),
        elapsed_ns: String(process.hrtime.bigint() - started),
      };
      return { body, format, summary: JSON.stringify(summary) };
    } catch (err) {
      throw fromEngine(err);
    } finally {
      session?.close();
    }
  }
}

/** The SET statement that puts the query's settings and parameters in place. */
function prelude(query: SqlQuery): string {
  const assignments: string[] = [];
  for (const [name, value] of query.params) {
    if (!SETTING_NAME.test(name)) throw sqlErrors.badArguments(`Bad query parameter name '${name}'`);
    assignments.push(`param_${name} = ${stringLiteral(value)}`);
  }
  // readonly comes last among the settings (./limits.ts): one SET checks all of them before it applies any.
  for (const [name, value] of query.settings) assignments.push(`${name} = ${stringLiteral(value)}`);
  return `SET ${assignments.join(', ')}`;
}
