import { randomUUID } from 'node:crypto';
import { allowStatement } from './allowlist.ts';
import type { SqlAnswer, SqlBackend } from './backend.ts';
import { loadCatalog, type FunctionCatalog } from './catalog.ts';
import { querySettings, type Limits } from './limits.ts';
import { readQuery, refused, type Reader } from './read.ts';

/** An operator's query as the listener or `engine sql` receives it. */
export interface OperatorQuery {
  sql: string;
  /** The format when the query names none. */
  defaultFormat: string | undefined;
  /** The database the request names: the engine's, or it is refused. */
  database: string | undefined;
  queryId: string;
  /** The settings the request asks for (./limits.ts decides). */
  settings: readonly (readonly [string, string])[];
  params: readonly (readonly [string, string])[];
}

const catalogs = new WeakMap<SqlBackend, Promise<FunctionCatalog>>();

/**
 * Reads the query with the engine's parser, holds it to the allowlist, then runs what the parser
 * wrote back, under the limits (docs/sql.md, "What runs"). Throws an SqlError for a refusal.
 */
export async function runOperatorQuery(backend: SqlBackend, request: OperatorQuery, limits: Limits): Promise<SqlAnswer> {
  const settings = querySettings(request.settings, limits);
  // Reading answers hold every line of the tree and every function: only time and memory bound them.
  const reading: [string, string][] = [
    ['max_execution_time', String(limits.max_execution_time)],
    ['max_memory_usage', String(limits.max_memory_usage)],
    ['readonly', '1'],
  ];
  const read: Reader = async (sql, format) => {
    const answer = await backend.run({ sql, defaultFormat: format, queryId: randomUUID(), settings: reading, params: request.params });
    return Buffer.from(answer.body).toString('utf8');
  };
  const query = await readQuery(read, request.sql);
  if (request.database !== undefined && request.database !== query.database) {
    throw refused(`the database ${request.database} is not the engine's (${query.database})`);
  }
  const { format } = allowStatement(query, await catalog(backend, read));
  return backend.run({ sql: query.text, defaultFormat: format ?? request.defaultFormat, queryId: request.queryId, settings, params: request.params });
}

/** The backend's functions, read once; a failed read is tried again by the next query. */
function catalog(backend: SqlBackend, read: Reader): Promise<FunctionCatalog> {
  let loading = catalogs.get(backend);
  if (loading === undefined) {
    loading = loadCatalog(read);
    catalogs.set(backend, loading);
    loading.catch(() => catalogs.delete(backend));
  }
  return loading;
}
