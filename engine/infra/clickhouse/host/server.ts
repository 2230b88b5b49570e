import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { HostEngine, type Answer } from './engine.ts';
import { ClickHouseException, fromEngine, httpErrors } from './errors.ts';
import { readQuery } from './request.ts';

const gzipAsync = promisify(gzip);

export interface HostServerOptions {
  /** The chDB data directory; one process at a time may open it. */
  dataPath: string;
  /** A Unix socket's path, or a TCP port on 127.0.0.1 (0: any free one). */
  listen: { path: string } | { port: number };
  /**
   * When set, every query must carry it as its HTTP Basic password, and comes from the engine,
   * whose queries are one statement each (the SQL listener's already checked): the server does not
   * parse them again, as a ClickHouse server would to refuse a second statement.
   */
  password?: string;
}

export interface HostServer {
  /** The TCP port, when it listens on one. */
  port: number | undefined;
  /** Stops listening and closes the engine. */
  close(): Promise<void>;
}

/** ClickHouse answers 1 MiB URLs (http_max_uri_size); Node's default stops at 16 KiB of headers. */
const MAX_HEADER_BYTES = 1 << 20;
/**
 * How long an idle connection is kept, ms: far longer than @clickhouse/client keeps an idle socket
 * (2.5 s), so the client always closes first. With Node's 5 s, a starved process on either side
 * could see a request meet a connection the server was closing, and fail with `socket hang up`.
 */
const HOST_KEEP_ALIVE_MS = 60_000;

/**
 * A ClickHouse HTTP interface over the embedded chDB engine: what @clickhouse/client sends in
 * server mode, answered the way a server answers it. The embedded engine runs in a process of its
 * own behind it (./main.ts), and the tests' ClickHouse stand-in is one on a TCP port. Not a
 * server: no users but one password, no quotas, no streaming (each answer is built whole before
 * it is sent).
 */
export async function startHostServer(options: HostServerOptions): Promise<HostServer> {
  const engine = new HostEngine(options.dataPath, options.password === undefined);
  const password = options.password === undefined ? undefined : Buffer.from(options.password);
  const timezone = await engine.timezone();
  const running = new Set<string>();
  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES, keepAlive: true }, (req, res) => {
    void handle(req, res).catch((err: unknown) => res.destroy(err instanceof Error ? err : new Error(String(err))));
  });
  server.keepAliveTimeout = HOST_KEEP_ALIVE_MS;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://host');
    if (req.method === 'GET' && (url.pathname === '/ping' || (url.pathname === '/' && !url.searchParams.has('query')))) {
      req.resume();
      res.writeHead(200, { 'Content-Type': 'text/html; charset=UTF-8' }).end('Ok.\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'POST') {
      req.resume();
      res.writeHead(405, { Allow: 'GET, POST' }).end();
      return;
    }
    let queryId = '';
    try {
      if (password && !authorized(req, password)) throw new ClickHouseException(516, 'AUTHENTICATION_FAILED', 'default: Authentication failed: password is incorrect');
      const query = await readQuery(req, url);
      queryId = query.queryId;
      if (running.has(queryId)) throw httpErrors.sameQueryId(queryId);
      running.add(queryId);
      let answer: Answer;
      try {
        answer = await engine.run(query);
      } finally {
        running.delete(queryId);
      }
      const headers: Record<string, string> = {
        'X-ClickHouse-Query-Id': queryId,
        'X-ClickHouse-Timezone': timezone,
        'X-ClickHouse-Summary': JSON.stringify(answer.summary),
        'Content-Type': contentType(answer.format),
      };
      if (answer.format !== undefined) headers['X-ClickHouse-Format'] = answer.format;
      let body = Buffer.from(answer.body);
      if (query.gzipResponse) {
        body = await gzipAsync(body);
        headers['Content-Encoding'] = 'gzip';
      }
      res.writeHead(200, headers).end(body);
    } catch (err) {
      req.resume();
      const exception = fromEngine(err);
      res
        .writeHead(exception.status, {
          'Content-Type': 'text/plain; charset=UTF-8',
          'X-ClickHouse-Exception-Code': String(exception.code),
          ...(queryId === '' ? {} : { 'X-ClickHouse-Query-Id': queryId }),
        })
        .end(exception.body(engine.version));
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const listening = (): void => {
      server.off('error', reject);
      resolve();
    };
    if ('path' in options.listen) server.listen(options.listen.path, listening);
    else server.listen(options.listen.port, '127.0.0.1', listening);
  });
  const address = server.address();
  let closing: Promise<void> | undefined;
  return {
    port: typeof address === 'object' && address ? (address as AddressInfo).port : undefined,
    close: () => {
      closing ??= (async () => {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        engine.close();
      })();
      return closing;
    },
  };
}

/** The request's HTTP Basic password is `password` (compared in constant time). */
function authorized(req: IncomingMessage, password: Buffer): boolean {
  const basic = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
  const decoded = Buffer.from(basic ?? '', 'base64').toString('utf8');
  const given = Buffer.from(decoded.slice(decoded.indexOf(':') + 1));
  return basic !== undefined && decoded.includes(':') && given.length === password.length && timingSafeEqual(given, password);
}

function contentType(format: string | undefined): string {
  if (format === undefined) return 'text/plain; charset=UTF-8';
  if (/^JSON/i.test(format)) return 'application/json; charset=UTF-8';
  if (/^(TSV|TabSeparated)/i.test(format)) return 'text/tab-separated-values; charset=UTF-8';
  if (/^CSV/i.test(format)) return 'text/csv; charset=UTF-8';
  return 'application/octet-stream';
}
