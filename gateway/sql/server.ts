import type { Config } from '../../schemas/config.ts';
import { Agent, fetch, type Dispatcher, type Response } from 'undici';
import type { HostEndpoint } from '../../engine/infra/clickhouse/client.ts';
import type { SqlAnswer, SqlBackend, SqlQuery } from './backend.ts';
import { SqlError } from './errors.ts';

/** A refusal of the server, answered as it came: its status, code and text. */
class ServerError extends SqlError {
  constructor(
    code: number,
    status: number,
    private readonly text: string,
  ) {
    super(code, 'SERVER', text, status);
  }

  override body(): string {
    return this.text;
  }
}

/** How long past max_execution_time the listener waits for the server before it gives up. */
const GRACE_MS = 5000;

/**
 * Queries forwarded to the ClickHouse server of CLICKHOUSE_URL, with the same settings the embedded
 * engine gets (the limits and readonly = 1), as a POST so that no server default for GET applies.
 * The URL's credentials and its path (the database) are the engine's; the server answers in the
 * format asked, and its answer is passed on whole.
 */
export class ServerSql implements SqlBackend {
  private readonly base: URL;
  private readonly authorization: string | undefined;
  private readonly database: string | undefined;

  /** `dispatcher`: how to reach the server, when not by the URL's host (the embedded engine's socket). */
  constructor(
    url: string,
    private readonly dispatcher?: Dispatcher,
  ) {
    const parsed = new URL(url);
    this.authorization =
      parsed.username === '' ? undefined : `Basic ${Buffer.from(`${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`).toString('base64')}`;
    this.database = parsed.pathname.length > 1 ? decodeURIComponent(parsed.pathname.slice(1)) : undefined;
    this.base = new URL(`${parsed.protocol}//${parsed.host}/`);
  }

  /** The embedded engine's own process (engine/infra/clickhouse/host/), on its Unix socket. */
  static onHost(host: HostEndpoint): ServerSql {
    return new ServerSql(`http://default:${encodeURIComponent(host.password)}@clickhouse-host/`, new Agent({ connect: { socketPath: host.socketPath } }));
  }

  /** Unknown: the listener's own error texts then carry no version. */
  version(): string {
    return '';
  }

  async run(query: SqlQuery): Promise<SqlAnswer> {
    const url = new URL(this.base);
    if (this.database !== undefined) url.searchParams.set('database', this.database);
    if (query.defaultFormat !== undefined) url.searchParams.set('default_format', query.defaultFormat);
    url.searchParams.set('query_id', query.queryId);
    let seconds = 0;
    for (const [name, value] of query.settings) {
      url.searchParams.set(name, value);
      if (name === 'max_execution_time') seconds = Number(value);
    }
    for (const [name, value] of query.params) url.searchParams.set(`param_${name}`, value);
    let response: Response;
    let body: Uint8Array;
    try {
      response = await fetch(url, {
        method: 'POST',
        body: query.sql,
        headers: { 'Content-Type': 'text/plain; charset=UTF-8', ...(this.authorization ? { Authorization: this.authorization } : {}) },
        signal: AbortSignal.timeout(seconds * 1000 + GRACE_MS),
        ...(this.dispatcher ? { dispatcher: this.dispatcher } : {}),
      });
      body = new Uint8Array(await response.arrayBuffer());
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      throw new SqlError(210, 'NETWORK_ERROR', `The ClickHouse server did not answer: ${reason}`, 503);
    }
    const code = response.headers.get('x-clickhouse-exception-code');
    if (!response.ok || code !== null) throw new ServerError(Number(code ?? 1001), response.status, Buffer.from(body).toString('utf8'));
    return { body, format: response.headers.get('x-clickhouse-format') ?? undefined, summary: response.headers.get('x-clickhouse-summary') ?? '{}' };
  }
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
