import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { StandInEngine, type Answer } from './engine.ts';
import { fromEngine, httpErrors } from './errors.ts';
import { readQuery } from './request.ts';

const gzipAsync = promisify(gzip);

export interface ClickHouseStandIn {
  /** Base URL, e.g. http://127.0.0.1:41234; append `/<database>` to pick a database. */
  url: string;
  /** Stops listening, closes the engine and removes its data directory. */
  close(): Promise<void>;
}

/** ClickHouse answers 1 MiB URLs (http_max_uri_size); Node's default stops at 16 KiB of headers. */
const MAX_HEADER_BYTES = 1 << 20;

/**
 * A ClickHouse HTTP interface on 127.0.0.1 (port 0) over the embedded chDB engine with a fresh data
 * directory: what @clickhouse/client sends in server mode, answered the way a server answers it.
 * Not a server: no users, no quotas, no streaming (each answer is built whole before it is sent).
 */
export async function startClickHouseStandIn(): Promise<ClickHouseStandIn> {
  const dataDir = mkdtempSync(join(tmpdir(), 'engine-ch-http-'));
  const engine = new StandInEngine(dataDir);
  const timezone = await engine.timezone();
  const running = new Set<string>();
  const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES, keepAlive: true }, (req, res) => {
    void handle(req, res).catch((err: unknown) => res.destroy(err instanceof Error ? err : new Error(String(err))));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://stand-in');
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

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      closing ??= (async () => {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        engine.close();
        rmSync(dataDir, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}

function contentType(format: string | undefined): string {
  if (format === undefined) return 'text/plain; charset=UTF-8';
  if (/^JSON/i.test(format)) return 'application/json; charset=UTF-8';
  if (/^(TSV|TabSeparated)/i.test(format)) return 'text/tab-separated-values; charset=UTF-8';
  if (/^CSV/i.test(format)) return 'text/csv; charset=UTF-8';
  return 'application/octet-stream';
}
