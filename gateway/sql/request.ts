import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { sqlErrors } from './errors.ts';

/** One query as the listener receives it: ClickHouse's HTTP interface, read-only subset (docs/sql.md). */
export interface SqlRequest {
  /** The `query` parameter and the body, in that order. */
  sql: string;
  /** `default_format` or `X-ClickHouse-Format`: the format unless the query names one. */
  defaultFormat: string | undefined;
  database: string | undefined;
  queryId: string;
  /** Every parameter that is not reserved is a setting, as ClickHouse reads them. */
  settings: [string, string][];
  /** `param_<name>` values, in the text form the engine binds `{name:Type}` from. */
  params: [string, string][];
}

/** Longest query text read: ClickHouse's own max_query_size is 256 KiB. */
export const MAX_QUERY_BYTES = 1 << 20;

const RESERVED = new Set(['query', 'database', 'default_format', 'query_id']);

/** Reads the query of a GET or POST `/`; throws an SqlError for what ClickHouse refuses too. */
export async function readSqlRequest(req: IncomingMessage, url: URL): Promise<SqlRequest> {
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding !== 'identity') throw sqlErrors.badArguments(`Unsupported Content-Encoding '${encoding}'`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_QUERY_BYTES) throw sqlErrors.tooLarge(MAX_QUERY_BYTES);
    chunks.push(chunk as Buffer);
  }
  const body = Buffer.concat(chunks).toString('utf8');
  const request: SqlRequest = {
    sql: '',
    defaultFormat: header(req, 'x-clickhouse-format'),
    database: header(req, 'x-clickhouse-database'),
    queryId: '',
    settings: [],
    params: [],
  };
  const reserved = new Map<string, string>();
  for (const [name, value] of url.searchParams) {
    if (name.startsWith('param_')) request.params.push([name.slice('param_'.length), value]);
    else if (RESERVED.has(name)) reserved.set(name, value);
    else if (name !== '') request.settings.push([name, value]);
  }
  const head = reserved.get('query') ?? '';
  request.sql = head !== '' && body !== '' ? `${head}\n${body}` : head || body;
  request.defaultFormat ??= reserved.get('default_format');
  request.database ??= reserved.get('database');
  request.queryId = reserved.get('query_id') || randomUUID();
  return request;
}

/**
 * The key a request carries: the HTTP Basic password (any user name), `Authorization: Bearer`, or
 * `X-ClickHouse-Key` (what ClickHouse clients send with `X-ClickHouse-User`).
 */
export function presentedKey(req: IncomingMessage): string | undefined {
  const auth = req.headers.authorization ?? '';
  const basic = /^Basic\s+(\S+)$/i.exec(auth)?.[1];
  if (basic !== undefined) {
    const decoded = Buffer.from(basic, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return nonEmpty(colon < 0 ? undefined : decoded.slice(colon + 1));
  }
  const bearer = /^Bearer\s+(\S+)$/i.exec(auth)?.[1];
  return nonEmpty(bearer) ?? header(req, 'x-clickhouse-key');
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? nonEmpty(value) : undefined;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
