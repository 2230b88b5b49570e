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

/**
 * Settings that only shape how rows are written, which a request may set: an allowlist, since
 * some output settings name a path (`output_format_schema` writes a schema file) or a server to
 * call (`format_avro_schema_registry_url`).
 */
export const OUTPUT_SETTINGS: ReadonlySet<string> = new Set([
  'date_time_output_format', 'interval_output_format', 'format_csv_delimiter', 'format_csv_null_representation', 'format_tsv_null_representation',
  'output_format_always_write_decimal_point_in_float_and_decimal', 'output_format_arrow_compression_method', 'output_format_arrow_string_as_string',
  'output_format_csv_crlf_end_of_line', 'output_format_decimal_trailing_zeros', 'output_format_float_precision', 'output_format_json_array_of_rows',
  'output_format_json_escape_forward_slashes', 'output_format_json_map_as_array_of_tuples', 'output_format_json_named_tuples_as_objects',
  'output_format_json_pretty_print', 'output_format_json_quote_64bit_floats', 'output_format_json_quote_64bit_integers',
  'output_format_json_quote_decimals', 'output_format_json_quote_denormals', 'output_format_json_skip_null_value_in_named_tuples',
  'output_format_json_validate_utf8', 'output_format_markdown_escape_special_characters', 'output_format_parquet_compression_method',
  'output_format_parquet_string_as_string', 'output_format_pretty_color', 'output_format_pretty_grid_charset', 'output_format_pretty_max_column_pad_width',
  'output_format_pretty_max_rows', 'output_format_pretty_max_value_width', 'output_format_pretty_row_numbers', 'output_format_tsv_crlf_end_of_line',
  'output_format_write_statistics',
]);

/**
 * The settings a query runs with, in order: the limits (lowered where the request asks), the output
 * settings it asked for, then `readonly = 1`, which makes the engine refuse writes, DDL, SYSTEM
 * and any later SET. Throws the error ClickHouse gives for a setting a read-only user may not
 * change, or a limit raised.
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
    } else if (OUTPUT_SETTINGS.has(name)) output.push([name, value]);
    else throw sqlErrors.readonlySetting(name);
  }
  return [...Object.entries(chosen).map(([n, v]): [string, string] => [n, String(v)]), ...output, ['readonly', '1']];
}
