import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../engine/infra/process/log.ts';
import { FailureLimiter, type OperatorKeys } from './auth.ts';
import type { SqlBackend } from './backend.ts';
import { SqlError, sqlErrors } from './errors.ts';
import type { SqlLimits } from './limits.ts';
import { runOperatorQuery } from './operator-query.ts';
import { presentedKey, readSqlRequest } from './request.ts';

export interface SqlListenerOptions {
  host: string;
  port: number;
  backend: SqlBackend;
  keys: OperatorKeys;
  limits: SqlLimits;
  log: Logger;
  /** How long close() lets running queries finish. */
  shutdownMs: number;
}

export interface SqlListener {
  port: number;
  /** Refuses new queries, lets running ones finish within shutdownMs, then closes. Idempotent. */
  close(): Promise<void>;
}

/** ClickHouse answers 1 MiB URLs (http_max_uri_size); Node's default stops at 16 KiB of headers. */
const MAX_HEADER_BYTES = 1 << 20;

/**
 * The SQL listener: a read-only subset of ClickHouse's HTTP interface on its own port, for
 * operator keys (docs/sql.md). node:http, apart from the gateway's route table: its answers are
 * ClickHouse's, not the public API's.
 */
export async function startSqlListener(options: SqlListenerOptions): Promise<SqlListener> {
  const { backend, keys, limits, log } = options;
  const failures = new FailureLimiter();
  const running = new Set<Promise<void>>();
  let queries = 0;
  let closing: Promise<void> | undefined;

  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES, keepAlive: true }, (req, res) => {
    const done = handle(req, res).catch((err: unknown) => {
      log.error('sql answer failed', { err });
      res.destroy();
    });
    running.add(done);
    void done.finally(() => running.delete(done));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sql');
    if (url.pathname === '/ping' || (url.pathname === '/' && req.method === 'GET' && !url.searchParams.has('query'))) {
      req.resume();
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=UTF-8' }).end('Ok.\n');
      return;
    }
    if (url.pathname !== '/') {
      req.resume();
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=UTF-8' }).end(`There is no handle ${url.pathname}\n\nUse / or /ping\n`);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'POST') {
      req.resume();
      res.writeHead(405, { Allow: 'GET, POST' }).end();
      return;
    }
    let queryId = url.searchParams.get('query_id') ?? '';
    let counted = false;
    try {
      if (closing) throw sqlErrors.shuttingDown();
      await authenticate(req);
      if (queries >= limits.maxConcurrent) throw sqlErrors.tooManyQueries(limits.maxConcurrent);
      queries++;
      counted = true;
      const request = await readSqlRequest(req, url);
      queryId = request.queryId;
      if (request.sql.trim() === '') throw sqlErrors.syntax('Empty query');
      const answer = await runOperatorQuery(backend, request, limits.limits);
      res
        .writeHead(200, {
          'Content-Type': contentType(answer.format),
          'X-ClickHouse-Query-Id': queryId,
          'X-ClickHouse-Summary': answer.summary,
          ...(answer.format === undefined ? {} : { 'X-ClickHouse-Format': answer.format }),
        })
        .end(answer.body);
    } catch (caught) {
      req.resume();
      const err = caught instanceof SqlError ? caught : internal(caught, queryId);
      res
        .writeHead(err.status, {
          'Content-Type': 'text/plain; charset=UTF-8',
          'X-ClickHouse-Exception-Code': String(err.code),
          ...(queryId === '' ? {} : { 'X-ClickHouse-Query-Id': queryId }),
          ...(err.status === 429 ? { 'Retry-After': String(FailureLimiter.retryAfterSeconds) } : {}),
        })
        .end(err.body(backend.version()));
    } finally {
      if (counted) queries--;
    }
  }

  /** A failure that is not the engine's refusal: a bug, logged; answered as ClickHouse answers a foreign exception. */
  function internal(err: unknown, queryId: string): SqlError {
    log.error('sql query failed', { err, query_id: queryId });
    return new SqlError(1001, 'STD_EXCEPTION', `Internal error, logged with query id ${queryId}`);
  }

  async function authenticate(req: IncomingMessage): Promise<void> {
    const address = req.socket.remoteAddress ?? '';
    if (!failures.allowed(address)) throw sqlErrors.tooManyFailures();
    const key = presentedKey(req);
    if (key !== undefined && (await keys.check(key).catch(unreachable))) return;
    failures.fail(address);
    log.warn('sql key refused', { remote: address, reason: key === undefined ? 'no key' : 'not a live operator key' });
    throw key === undefined ? sqlErrors.noKey() : sqlErrors.badKey();
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    close: () => {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([Promise.allSettled([...running]), new Promise((r) => (timer = setTimeout(r, options.shutdownMs)))]);
        clearTimeout(timer);
        server.closeAllConnections();
        await stopped;
      })();
      return closing;
    },
  };
}

function unreachable(err: unknown): never {
  throw new SqlError(210, 'NETWORK_ERROR', `The key store did not answer: ${err instanceof Error ? err.message : String(err)}`, 503);
}

function contentType(format: string | undefined): string {
  if (format === undefined) return 'text/plain; charset=UTF-8';
  if (/^JSON/i.test(format)) return 'application/json; charset=UTF-8';
  if (/^(TSV|TabSeparated)/i.test(format)) return 'text/tab-separated-values; charset=UTF-8';
  if (/^CSV/i.test(format)) return 'text/csv; charset=UTF-8';
  if (/^(Pretty|Vertical|Markdown)/i.test(format)) return 'text/plain; charset=UTF-8';
  return 'application/octet-stream';
}
