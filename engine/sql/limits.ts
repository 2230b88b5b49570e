import type { Config } from '../../schemas/config.ts';
import { sqlErrors } from './errors.ts';

/** The limits every SQL query runs under; a request may lower each, never raise it (docs/sql.md, "Read-only, and the limits"). */
export const LimitNames = ['max_execution_time', 'max_memory_usage', 'max_rows_to_read', 'max_result_rows', 'max_result_bytes'] as const;
export type LimitName = (typeof LimitNames)[number];
export type Limits = Readonly<Record<LimitName, number>>;

export interface SqlLimits {
  /** Queries run at once; the next gets error 202. */
  maxConcurrent: number;
  limits: Limits;
}

/** The listener's limits, from SQL_MAX_* (schemas/config.ts). */
export function sqlLimits(config: Config): SqlLimits {
  return {
    maxConcurrent: config.SQL_MAX_CONCURRENT_QUERIES,
    limits: {
      max_execution_time: config.SQL_MAX_EXECUTION_TIME,
      max_memory_usage: config.SQL_MAX_MEMORY_USAGE,
      max_rows_to_read: config.SQL_MAX_ROWS_TO_READ,
      max_result_rows: config.SQL_MAX_RESULT_ROWS,
      max_result_bytes: config.SQL_MAX_RESULT_BYTES,
    },
  };
}

/** Settings of the HTTP layer that change nothing in what a query may do; the listener drops them. */
const HTTP_ONLY = new Set([
  'wait_end_of_query', 'send_progress_in_http_headers', 'enable_http_compression', 'http_zlib_compression_level', 'http_headers_progress_interval_ms',
  'http_response_buffer_size', 'buffer_size', 'compress', 'decompress', 'session_id', 'session_timeout', 'session_check', 'close_session',
  'user', 'password', 'quota_key', 'stacktrace', 'client_protocol_version', 'role',
]);

/** Settings that only shape the output, which a read-only query may change. */
const OUTPUT = /^(output_format_\w+|date_time_output_format)$/;

/**
 * The settings a query runs with, in order: the limits (lowered where the request asks), the output
 * settings it asked for, then `readonly = 1`, which makes the engine refuse writes, DDL, SYSTEM,
 * any later SET or SETTINGS clause, and the table functions that reach outside it. Throws the
 * error ClickHouse gives for a setting a read-only user may not change, or a limit raised.
 */
export function querySettings(requested: readonly (readonly [string, string])[], limits: Limits): [string, string][] {
  const chosen: Record<string, number> = { ...limits };
  const output: [string, string][] = [];
  for (const [name, value] of requested) {
    if (HTTP_ONLY.has(name) || (name === 'readonly' && value === '1')) continue;
    if ((LimitNames as readonly string[]).includes(name)) {
      const max = limits[name as LimitName];
      const asked = Number(value);
      if (!/^\d+$/.test(value.trim()) || asked === 0 || asked > max) throw sqlErrors.constraint(name, max);
      chosen[name] = asked;
    } else if (OUTPUT.test(name)) output.push([name, value]);
    else throw sqlErrors.readonlySetting(name);
  }
  return [...Object.entries(chosen).map(([n, v]): [string, string] => [n, String(v)]), ...output, ['readonly', '1']];
}
