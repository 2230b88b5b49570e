import { createClient } from '@clickhouse/client';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { hostEndpoint, openClickHouse } from '../../engine/infra/clickhouse/client.ts';
import type { SqlBackend } from '../../gateway/sql/backend.ts';
import { SqlError } from '../../gateway/sql/errors.ts';
import { runOperatorQuery } from '../../gateway/sql/operator-query.ts';
import { ServerSql } from '../../gateway/sql/server.ts';
import { testDatabase } from '../clickhouse-server/database.ts';

/** What a table operators may not read holds: no answer may ever carry it. */
export const CANARY = 'canary-4e1f0b';

export const LIMITS = { max_execution_time: 30, max_memory_usage: 1 << 30, max_rows_to_read: 1e9, max_result_rows: 1e6, max_result_bytes: 1e8 };

export interface SqlFixture {
  backend: SqlBackend;
  /** The engine's database. */
  database: string;
  /** Where a query could write: a folder that must stay empty, and a file whose text is CANARY. */
  dir: string;
  canaryFile: string;
  /** A TCP listener on 127.0.0.1 that counts connections; queries name it in URLs. */
  port: number;
  connections(): number;
  /** Files a query wrote: in `dir`, or named `written-*` in the working directory (relative paths). */
  written(): string[];
  /** Runs a query as the engine's own client, around the listener: for what a test sets up or lists. */
  admin(sql: string): Promise<string>;
  /** Runs a query as the listener does: the answer's text, or the refusal's `code NAME message`. */
  run(sql: string, settings?: [string, string][], params?: [string, string][]): Promise<{ ok: true; text: string } | { ok: false; code: number; error: string }>;
}

const TABLES = ['message_deliveries', 'receipts', 'events', 'users', 'webhook_attempts', 'secret'];

/**
 * The engine's tables (reduced to a few columns) with a row each, and `secret`, which operators
 * may not read, holding CANARY: on the embedded engine (its own process) under a fresh directory,
 * or in a fresh database of TEST_CLICKHOUSE_URL. Queries go through runOperatorQuery, as the
 * listener's do.
 */
export async function sqlFixture(t: Test): Promise<SqlFixture> {
  const dir = mkdtempSync(join(tmpdir(), 'sql-allowlist-'));
  const outside = join(dir, 'outside');
  mkdirSync(outside);
  const canaryFile = join(dir, 'canary.txt');
  writeFileSync(canaryFile, CANARY);
  const database = await testDatabase();
  const create = TABLES.map((name) => `CREATE TABLE ${name} (project String, external_id String, status String, at DateTime64(3, 'UTC')) ENGINE = MergeTree ORDER BY at`);
  const fill = TABLES.map((name) => `INSERT INTO ${name} VALUES ('p', '${name === 'secret' ? CANARY : 'u1'}', 'sent', '2026-01-01 00:00:00')`);
  const url = database.env.CLICKHOUSE_URL;
  const dataDir = join(dir, 'data');
  const ch = url === undefined ? await openClickHouse({ DATA_DIR: dataDir, CLICKHOUSE_SANDBOX: 'auto' }) : createClient({ url });
  t.teardown(() => ch.close());
  const host = hostEndpoint(ch);
  const backend: SqlBackend = host ? ServerSql.onHost(host) : new ServerSql(url ?? '');
  const name = url === undefined ? 'default' : new URL(url).pathname.slice(1);
  const admin = async (sql: string): Promise<string> => {
    if (!/^(CREATE|INSERT)\b/.test(sql)) return (await ch.query({ query: sql, format: 'TabSeparatedRaw' })).text();
    await ch.command({ query: sql });
    return '';
  };
  for (const statement of [...create, ...fill]) await admin(statement);
  const sockets = new Set<Socket>();
  let connections = 0;
  const listener = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.end('HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\na,b\n1,2\n');
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const address = listener.address();
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => listener.close(() => resolve()));
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    backend,
    database: name,
    dir: outside,
    canaryFile,
    admin,
    port: typeof address === 'object' && address ? address.port : 0,
    connections: () => connections,
    written: () => [...readdirSync(outside), ...readdirSync(process.cwd()).filter((f) => f.startsWith('written-'))],
    run: async (sql, settings = [], params = []) => {
      try {
        const answer = await runOperatorQuery(backend, { sql, defaultFormat: 'TSV', database: undefined, queryId: `t-${Date.now()}`, settings, params }, LIMITS);
        return { ok: true, text: Buffer.from(answer.body).toString('utf8') };
      } catch (err) {
        if (!(err instanceof SqlError)) throw err;
        return { ok: false, code: err.code, error: `${err.code} ${err.type} ${err.message}` };
      }
    },
  };
}
