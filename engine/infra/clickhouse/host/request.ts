import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { promisify } from 'node:util';
import { brotliDecompress, gunzip, inflate } from 'node:zlib';
import { httpErrors } from './errors.ts';

/** One query as the HTTP interface receives it (https://clickhouse.com/docs/interfaces/http). */
export interface HttpQuery {
  /** GET runs with readonly = 2, as on a server. */
  readonly: boolean;
  /** The `query` parameter, if any. */
  head: string;
  /** The request body: the rest of the query, or the data of an INSERT. */
  body: string;
  database: string | undefined;
  defaultFormat: string | undefined;
  queryId: string;
  session: { id: string; timeoutMs: number; check: boolean; close: boolean } | undefined;
  /** Every other parameter is a setting (HTTPHandler: everything not reserved). */
  settings: [string, string][];
  /** `param_<name>` values, in the text form the server binds `{name:Type}` from. */
  params: [string, string][];
  /** The client accepts gzip and asked for enable_http_compression = 1. */
  gzipResponse: boolean;
}

/** Parameters HTTPHandler reads itself and never applies as settings. */
const RESERVED = new Set([
  'query', 'database', 'default_format', 'compress', 'decompress', 'user', 'password', 'quota_key', 'query_id', 'stacktrace',
  'buffer_size', 'wait_end_of_query', 'session_id', 'session_timeout', 'session_check', 'client_protocol_version', 'close_session', 'role',
]);

const decoders: Record<string, (b: Buffer) => Promise<Buffer>> = {
  gzip: promisify(gunzip),
  deflate: promisify(inflate),
  br: promisify(brotliDecompress),
};

/** Reads a request into an HttpQuery; throws a ClickHouseException for what a server refuses. */
export async function readQuery(req: IncomingMessage, url: URL): Promise<HttpQuery> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  let raw: Buffer = Buffer.concat(chunks);
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding !== 'identity') {
    const decode = decoders[encoding];
    if (!decode) throw httpErrors.compression(encoding);
    raw = await decode(raw);
  }
  const fields: [string, string][] = [...url.searchParams];
  let body = raw.toString('utf8');
  const contentType = req.headers['content-type'] ?? '';
  if (contentType.startsWith('multipart/form-data')) {
    fields.push(...multipartFields(body, contentType));
    body = '';
  }
  const query: HttpQuery = {
    readonly: req.method === 'GET',
    head: '',
    body,
    database: headerValue(req, 'x-clickhouse-database'),
    defaultFormat: headerValue(req, 'x-clickhouse-format'),
    queryId: headerValue(req, 'x-clickhouse-query-id') ?? '',
    session: undefined,
    settings: [],
    params: [],
    gzipResponse: false,
  };
  const reserved = new Map<string, string>();
  for (const [name, value] of fields) {
    if (name.startsWith('param_')) query.params.push([name.slice('param_'.length), value]);
    else if (RESERVED.has(name)) reserved.set(name, name === 'query' ? (reserved.get('query') ?? '') + value : value);
    else if (name === 'enable_http_compression') query.gzipResponse = value === '1' && /\bgzip\b/.test(req.headers['accept-encoding'] ?? '');
    else if (name !== '') query.settings.push([name, value]);
  }
  query.head = reserved.get('query') ?? '';
  query.database ??= reserved.get('database');
  query.defaultFormat ??= reserved.get('default_format');
  query.queryId = reserved.get('query_id') ?? (query.queryId || randomUUID());
  const sessionId = reserved.get('session_id');
  if (sessionId !== undefined && sessionId !== '') {
    const timeout = Number(reserved.get('session_timeout') ?? '60');
    if (!Number.isInteger(timeout) || timeout < 0 || timeout > 3600) throw httpErrors.badArguments(`Invalid session timeout: '${reserved.get('session_timeout')}'`);
    query.session = { id: sessionId, timeoutMs: timeout * 1000, check: reserved.get('session_check') === '1', close: reserved.get('close_session') === '1' };
  }
  return query;
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The named parts of a multipart/form-data body (@clickhouse/client's use_multipart_params). */
function multipartFields(body: string, contentType: string): [string, string][] {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(contentType);
  const marker = boundary?.[1] ?? boundary?.[2];
  if (marker === undefined) throw httpErrors.badArguments('multipart/form-data without a boundary');
  const fields: [string, string][] = [];
  for (const part of body.split(`--${marker}`).slice(1)) {
    const split = part.indexOf('\r\n\r\n');
    if (split < 0) continue;
    const name = /name="([^"]*)"/.exec(part.slice(0, split))?.[1];
    if (name !== undefined) fields.push([name, part.slice(split + 4).replace(/\r\n$/, '')]);
  }
  return fields;
}
