/**
 * ClickHouse exceptions as the HTTP interface reports them: a status from the error name
 * (src/Server/HTTP/exceptionCodeToHTTPStatus.cpp), the `X-ClickHouse-Exception-Code` header, and
 * the body `Code: N. DB::Exception: <message>. (NAME) (version V)` that @clickhouse/client parses
 * into its ClickHouseError.
 */
export class ClickHouseException extends Error {
  constructor(
    readonly code: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }

  /** The HTTP status a server answers this exception with. */
  get status(): number {
    return STATUS_BY_NAME.get(this.type) ?? 500;
  }

  /** The response body, one line. */
  body(version: string): string {
    return `Code: ${this.code}. DB::Exception: ${this.message}. (${this.type}) (version ${version})\n`;
  }
}

/** Exceptions the HTTP layer raises itself, before the engine sees the query. */
export const httpErrors = {
  syntax: (message: string) => new ClickHouseException(62, 'SYNTAX_ERROR', message),
  badArguments: (message: string) => new ClickHouseException(36, 'BAD_ARGUMENTS', message),
  compression: (method: string) => new ClickHouseException(89, 'UNKNOWN_COMPRESSION_METHOD', `Unknown compression method '${method}'`),
  sessionNotFound: (id: string) => new ClickHouseException(372, 'SESSION_NOT_FOUND', `Session ${id} not found`),
  sessionLocked: (id: string) => new ClickHouseException(373, 'SESSION_IS_LOCKED', `Session ${id} is locked by a concurrent client`),
  sameQueryId: (id: string) => new ClickHouseException(216, 'QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING', `Query with id = ${id} is already running`),
};

const STATUS_GROUPS: [number, string[]][] = [
  [401, ['REQUIRED_PASSWORD']],
  [403, ['UNKNOWN_USER', 'WRONG_PASSWORD', 'AUTHENTICATION_FAILED', 'SET_NON_GRANTED_ROLE', 'ACCESS_DENIED']],
  [
    400,
    [
      'BAD_ARGUMENTS', 'CANNOT_COMPILE_REGEXP', 'CANNOT_PARSE_TEXT', 'CANNOT_PARSE_ESCAPE_SEQUENCE', 'CANNOT_PARSE_QUOTED_STRING',
      'CANNOT_PARSE_DATE', 'CANNOT_PARSE_DATETIME', 'CANNOT_PARSE_NUMBER', 'CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING', 'CANNOT_PARSE_IPV4',
      'CANNOT_PARSE_IPV6', 'CANNOT_PARSE_INPUT_ASSERTION_FAILED', 'CANNOT_PARSE_UUID', 'DUPLICATE_COLUMN', 'ILLEGAL_COLUMN',
      'UNKNOWN_ELEMENT_IN_AST', 'UNKNOWN_TYPE_OF_AST_NODE', 'THERE_IS_NO_COLUMN', 'TOO_DEEP_AST', 'TOO_BIG_AST', 'UNEXPECTED_AST_STRUCTURE',
      'SYNTAX_ERROR', 'INCORRECT_DATA', 'TYPE_MISMATCH', 'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE',
    ],
  ],
  [
    404,
    [
      'UNKNOWN_TABLE', 'UNKNOWN_FUNCTION', 'UNKNOWN_IDENTIFIER', 'UNKNOWN_TYPE', 'UNKNOWN_STORAGE', 'UNKNOWN_DATABASE', 'UNKNOWN_SETTING',
      'UNKNOWN_DIRECTION_OF_SORTING', 'UNKNOWN_AGGREGATE_FUNCTION', 'UNKNOWN_FORMAT', 'UNKNOWN_DATABASE_ENGINE', 'UNKNOWN_TYPE_OF_QUERY',
      'UNKNOWN_ROLE',
    ],
  ],
  [413, ['QUERY_IS_TOO_LARGE']],
  [501, ['NOT_IMPLEMENTED']],
  [503, ['SOCKET_TIMEOUT', 'CANNOT_OPEN_FILE', 'CANNOT_SCHEDULE_TASK']],
  [411, ['HTTP_LENGTH_REQUIRED']],
  [408, ['TIMEOUT_EXCEEDED']],
  [415, ['UNSUPPORTED_MEDIA_TYPE']],
];

const STATUS_BY_NAME = new Map(STATUS_GROUPS.flatMap(([status, names]) => names.map((name): [string, number] => [name, status])));

/** The exception behind an error thrown by chDB (engineException reads its message); anything else is a STD_EXCEPTION, as the server reports a foreign exception. */
export function fromEngine(err: unknown): ClickHouseException {
  if (err instanceof ClickHouseException) return err;
  const found = engineException(err);
  return found ? new ClickHouseException(found.code, found.type, found.text) : new ClickHouseException(1001, 'STD_EXCEPTION', (err instanceof Error ? err.message : String(err)).trim());
}

const LEADING_CODE = /^Code: (\d+)\. DB::Exception: /;
/** Trailing `(NAME)` and `(version …)` markers; chDB repeats them when it wraps an exception. */
const TRAILING_MARKERS = /(?:\.? \((?:[A-Z0-9_]*[A-Z]{3}[A-Z0-9_]*|version [^()]*(?:\([^()]*\))?)\))+\.?\s*$/;
const TYPE = /\(([A-Z0-9_]*[A-Z]{3}[A-Z0-9_]*)\)/g;

/**
 * Code, name and text of an exception the embedded engine threw: its message reads
 * `Code: N. DB::Exception: … (NAME)`, sometimes nested. Undefined for anything else.
 */
function engineException(err: unknown): { code: number; type: string; text: string } | undefined {
  let text = (err instanceof Error ? err.message : String(err)).trim();
  const code = LEADING_CODE.exec(text)?.[1];
  const type = [...text.matchAll(TYPE)].at(-1)?.[1];
  if (code === undefined || type === undefined) return undefined;
  for (let lead = LEADING_CODE.exec(text); lead; lead = LEADING_CODE.exec(text)) text = text.slice(lead[0].length);
  return { code: Number(code), type, text: text.replace(TRAILING_MARKERS, '') };
}
