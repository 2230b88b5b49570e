import { createRequire } from 'node:module';
import type { Session } from 'chdb';
import { ClickHouseException, fromEngine, httpErrors } from './errors.ts';
import type { HttpQuery } from './request.ts';
import { identifier, stringLiteral } from '../literal.ts';
import { formatClause, statementText } from './statement.ts';

const require = createRequire(import.meta.url);

/** The X-ClickHouse-Summary header's counters (all decimal strings, as the server sends them). */
export interface Summary {
  read_rows: string;
  read_bytes: string;
  written_rows: string;
  written_bytes: string;
  total_rows_to_read: string;
  result_rows: string;
  result_bytes: string;
  elapsed_ns: string;
}

export interface Answer {
  body: Uint8Array;
  /** The output format, for queries that return rows. */
  format: string | undefined;
  summary: Summary;
}

const INSERT_WITH_DATA = /^\s*INSERT\b[\s\S]*?\bFORMAT\s+(\w+)\s*$/i;
const LINE_FORMATS = /^(JSON(Compact)?(Strings)?EachRow|TSV|TabSeparated|CSV)$/i;
const SETTING_NAME = /^[A-Za-z_]\w*$/;

interface HttpSession {
  chdb: Session;
  busy: boolean;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Runs HTTP queries on one chDB data directory. Each query gets a connection of its own, so its
 * database, settings and parameters last for that query only, as on a server; a `session_id`
 * keeps its connection (and whatever USE, SET or temporary tables it ran) until its timeout.
 * Settings and parameters sent with a session's query stay in that session, unlike on a server.
 * chDB is loaded here only: the engine's own processes never map it.
 */
export class HostEngine {
  readonly version: string;
  private readonly Session: typeof Session;
  private readonly base: Session;
  private readonly sessions = new Map<string, HttpSession>();

  /** Opens the engine on `path`; one data directory per process (chDB binds one). */
  constructor(
    private readonly path: string,
    /** Refuse more than one statement, as a server does; off for the engine's own process, whose one client sends one. */
    private readonly oneStatement: boolean,
  ) {
    const chdb = require('chdb') as typeof import('chdb');
    this.Session = chdb.Session;
    this.version = chdb.version().libchdb;
    this.base = new this.Session(path);
  }

  /** The server time zone, for X-ClickHouse-Timezone. */
  async timezone(): Promise<string> {
    return (await this.base.queryAsync('SELECT timezone()', { format: 'TSVRaw' })).text().trim();
  }

  async run(query: HttpQuery): Promise<Answer> {
    const started = process.hrtime.bigint();
    const sql = query.head !== '' && query.body !== '' ? `${query.head}\n${query.body}` : query.head || query.body;
    if (sql.trim() === '') throw httpErrors.syntax('Empty query');
    const insert = INSERT_WITH_DATA.exec(query.head);
    // A server inserts nothing for an empty body; chDB would refuse with NO_DATA_TO_INSERT.
    if (insert && query.body.trim() === '') return { body: new Uint8Array(), format: undefined, summary: summary(started, 0, 0, true) };
    if (this.oneStatement) await this.assertOneStatement(sql);
    const { chdb, release } = this.connection(query);
    try {
      const prelude = this.prelude(query);
      if (prelude !== '') await chdb.queryAsync(prelude);
      // The engine writes in the query's own FORMAT clause where it has one, as a server does; the
      // header takes it from the text (an EXPLAIN's inner FORMAT is reported, though not used).
      const result = await chdb.queryAsync(sql, { format: query.defaultFormat ?? 'TabSeparated' });
      const format = formatClause(sql) ?? query.defaultFormat ?? 'TabSeparated';
      if (insert) {
        // chDB reports no written rows for an INSERT: the summary counts the rows sent, so a
        // deduplicated block is counted too (a server would count none).
        const rows = LINE_FORMATS.test(insert[1] ?? '') ? query.body.split('\n').filter((l) => l.trim() !== '').length : 0;
        return { body: result.bytes(), format: undefined, summary: summary(started, rows, Buffer.byteLength(query.body), true) };
      }
      return { body: result.bytes(), format, summary: summary(started, result.rowsRead, result.bytesRead, false) };
    } catch (err) {
      throw fromEngine(err);
    } finally {
      release();
    }
  }

  /**
   * Refuses more than one statement, as the server does ("Multi-statements are not allowed"),
   * which chDB would otherwise run one after another: the engine's own parser decides.
   */
  private async assertOneStatement(sql: string): Promise<void> {
    try {
      await this.base.queryAsync(`SELECT formatQuery(${stringLiteral(statementText(sql))})`, { format: 'TSVRaw' });
    } catch (err) {
      const refused = fromEngine(err);
      throw new ClickHouseException(refused.code, refused.type, refused.message.replace(/\.? ?: In scope [\s\S]*$/, ''));
    }
  }

  close(): void {
    for (const s of this.sessions.values()) {
      clearTimeout(s.timer);
      s.chdb.close();
    }
    this.sessions.clear();
    this.base.close();
  }

  /** USE and SET statements that put the query's database, settings and parameters in place. */
  private prelude(query: HttpQuery): string {
    const assignments: string[] = [];
    for (const [name, value] of query.settings) {
      if (!SETTING_NAME.test(name)) throw new ClickHouseException(115, 'UNKNOWN_SETTING', `Unknown setting '${name}'`);
      assignments.push(`${name} = ${stringLiteral(value)}`);
    }
    for (const [name, value] of query.params) {
      if (!SETTING_NAME.test(name)) throw httpErrors.badArguments(`Bad query parameter name '${name}'`);
      assignments.push(`param_${name} = ${stringLiteral(value)}`);
    }
    if (query.readonly) assignments.push("readonly = '2'");
    const statements = [
      ...(query.database === undefined ? [] : [`USE ${identifier(query.database)}`]),
      ...(assignments.length === 0 ? [] : [`SET ${assignments.join(', ')}`]),
    ];
    return statements.join('; ');
  }

  private connection(query: HttpQuery): { chdb: Session; release: () => void } {
    const wanted = query.session;
    if (wanted === undefined) {
      const chdb = new this.Session(this.path);
      return { chdb, release: () => chdb.close() };
    }
    let session = this.sessions.get(wanted.id);
    if (!session) {
      if (wanted.check) throw httpErrors.sessionNotFound(wanted.id);
      session = { chdb: new this.Session(this.path), busy: false, timer: undefined };
      this.sessions.set(wanted.id, session);
    }
    if (session.busy) throw httpErrors.sessionLocked(wanted.id);
    session.busy = true;
    clearTimeout(session.timer);
    const held = session;
    return {
      chdb: held.chdb,
      release: () => {
        held.busy = false;
        const end = () => {
          this.sessions.delete(wanted.id);
          held.chdb.close();
        };
        if (wanted.close) end();
        else held.timer = setTimeout(end, wanted.timeoutMs).unref();
      },
    };
  }
}

function summary(started: bigint, rows: number, bytes: number, written: boolean): Summary {
  const [r, b] = [String(rows), String(bytes)];
  return {
    read_rows: r,
    read_bytes: b,
    written_rows: written ? r : '0',
    written_bytes: written ? b : '0',
    total_rows_to_read: '0',
    result_rows: written ? '0' : r,
    result_bytes: written ? '0' : b,
    elapsed_ns: String(process.hrtime.bigint() - started),
  };
}
