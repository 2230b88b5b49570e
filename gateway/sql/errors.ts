/**
 * ClickHouse exceptions as its HTTP interface reports them (docs/sql.md, "Errors"): an HTTP status,
 * the `X-ClickHouse-Exception-Code` header and the body `Code: N. DB::Exception: <text>. (NAME)
 * (version V)`, which @clickhouse/client and other ClickHouse clients parse.
 */
export class SqlError extends Error {
  constructor(
    readonly code: number,
    readonly type: string,
    message: string,
    /** The answer's status; by default the one ClickHouse gives this error. */
    readonly status: number = STATUS_BY_NAME.get(type) ?? 500,
  ) {
    super(message);
  }

  /** The answer's body, one line; `version` is the engine's, when known. */
  body(version: string): string {
    return `Code: ${this.code}. DB::Exception: ${this.message}. (${this.type})${version === '' ? '' : ` (version ${version})`}\n`;
  }
}

/** Errors the listener raises itself, before a query reaches the engine; codes and names are ClickHouse's. */
export const sqlErrors = {
  syntax: (message: string) => new SqlError(62, 'SYNTAX_ERROR', message),
  badArguments: (message: string) => new SqlError(36, 'BAD_ARGUMENTS', message),
  tooLarge: (limit: number) => new SqlError(229, 'QUERY_IS_TOO_LARGE', `Query is too large (more than ${limit} bytes)`),
  readonlySetting: (name: string) => new SqlError(164, 'READONLY', `Cannot modify '${name}' setting in readonly mode`),
  constraint: (name: string, max: number) => new SqlError(452, 'SETTING_CONSTRAINT_VIOLATION', `Setting ${name} shouldn't be greater than ${max}`),
  tooManyQueries: (max: number) => new SqlError(202, 'TOO_MANY_SIMULTANEOUS_QUERIES', `Too many simultaneous queries. Maximum: ${max}`, 503),
  noKey: () =>
    new SqlError(194, 'REQUIRED_PASSWORD', 'An operator key is required: the HTTP Basic password, Authorization: Bearer or X-ClickHouse-Key', 401),
  badKey: () => new SqlError(516, 'AUTHENTICATION_FAILED', 'operator: Authentication failed: the key is not a live operator key', 401),
  tooManyFailures: () => new SqlError(516, 'AUTHENTICATION_FAILED', 'operator: too many failed authentications from this address, try again later', 429),
  shuttingDown: () => new SqlError(210, 'NETWORK_ERROR', 'The SQL listener is shutting down', 503),
};

const STATUS_GROUPS: [number, string[]][] = [
  [401, ['REQUIRED_PASSWORD']],
  [403, ['UNKNOWN_USER', 'WRONG_PASSWORD', 'AUTHENTICATION_FAILED', 'ACCESS_DENIED', 'READONLY', 'SETTING_CONSTRAINT_VIOLATION', 'INTO_OUTFILE_NOT_ALLOWED']],
  [
    400,
    [
      'BAD_ARGUMENTS', 'CANNOT_PARSE_TEXT', 'CANNOT_PARSE_QUOTED_STRING', 'CANNOT_PARSE_DATE', 'CANNOT_PARSE_DATETIME', 'CANNOT_PARSE_NUMBER',
      'CANNOT_PARSE_UUID', 'ILLEGAL_COLUMN', 'THERE_IS_NO_COLUMN', 'TOO_DEEP_AST', 'TOO_BIG_AST', 'SYNTAX_ERROR', 'TYPE_MISMATCH',
      'UNKNOWN_QUERY_PARAMETER', 'ILLEGAL_TYPE_OF_ARGUMENT', 'NUMBER_OF_ARGUMENTS_DOESNT_MATCH',
    ],
  ],
  [
    404,
    [
      'UNKNOWN_TABLE', 'UNKNOWN_FUNCTION', 'UNKNOWN_IDENTIFIER', 'UNKNOWN_TYPE', 'UNKNOWN_DATABASE', 'UNKNOWN_SETTING', 'UNKNOWN_FORMAT',
      'UNKNOWN_AGGREGATE_FUNCTION', 'UNKNOWN_TYPE_OF_QUERY',
    ],
  ],
  [413, ['QUERY_IS_TOO_LARGE']],
  [408, ['TIMEOUT_EXCEEDED']],
];

const STATUS_BY_NAME = new Map(STATUS_GROUPS.flatMap(([status, names]) => names.map((name): [string, number] => [name, status])));
