/**
 * The one registry of error codes (docs/api.md#errors): status, default message and an operator
 * hint. test/errors.test.ts fails when a code here is missing from docs/api.md or the reverse.
 */
export const ErrorCodes = {
  invalid_json: { status: 400, message: 'The body is not valid JSON (UTF-8).', hint: 'Send a UTF-8 JSON body.' },
  validation_failed: { status: 400, message: 'The body breaks the schema.', hint: 'Fix each listed path.' },
  missing_key: { status: 401, message: 'Authorization: Bearer <key> is missing or malformed.', hint: 'Send the project key.' },
  invalid_key: { status: 401, message: 'The key is unknown or revoked.', hint: 'Issue a key with `engine keys create`.' },
  identity_verification_failed: {
    status: 401,
    message: 'identity_hash is missing or does not match external_id.',
    hint: 'Send lowercase hex HMAC-SHA256(identity secret, external_id).',
  },
  wrong_key_type: { status: 403, message: 'This surface needs a REST key.', hint: 'Use a REST key from your backend.' },
  project_mismatch: { status: 403, message: "app_id is not the key's project.", hint: 'Send the project id of the key as app_id, or leave app_id out.' },
  not_found: { status: 404, message: 'Not found.', hint: 'Check the path and id.' },
  method_not_allowed: { status: 405, message: 'Method not allowed.', hint: 'See the Allow header.' },
  idempotency_conflict: {
    status: 409,
    message: 'The idempotency key was used with a different body.',
    hint: 'Use a new idempotency key for a new request.',
  },
  already_exists: {
    status: 409,
    message: 'A resource of that name already exists.',
    hint: 'Pick another name, or delete the existing one first.',
  },
  payload_too_large: { status: 413, message: 'The body is over the size limit.', hint: 'Split the request.' },
  unsupported_media_type: {
    status: 415,
    message: 'Content-Type must be application/json.',
    hint: 'Send Content-Type: application/json.',
  },
  rate_limited: { status: 429, message: 'Rate limit exceeded.', hint: 'Retry after Retry-After seconds.' },
  internal: {
    status: 500,
    message: 'Internal error: a bug on our side. Its error_id marks the details in the server log.',
    hint: 'Find the error_id in the server log: that line carries the stack.',
  },
  unavailable: { status: 503, message: 'The service cannot meet this call now.', hint: 'Retry after Retry-After seconds.' },
  overloaded: {
    status: 503,
    message: 'Redis is past its memory watermark and the spill journal is full: buffered writes are refused for now.',
    hint: 'Retry after Retry-After seconds; operators: see the Redis memory and oldest unapplied metrics.',
  },
} as const;

export type ErrorCode = keyof typeof ErrorCodes;

/** One entry of an error body: `{ "errors": [ { code, message, path? } ] }`. */
export interface ErrorItem {
  code: ErrorCode;
  message: string;
  path?: string;
  /** Only on `internal`: the id of the server log line that holds the stack. */
  error_id?: string;
}

/**
 * Errors by kind (docs/architecture.md#errors-by-kind). A thrown CallerError is answered with its code (4xx),
 * an UnavailableError with 503 and Retry-After, an OverloadedError with 503 `overloaded` and Retry-After;
 * anything else thrown is a bug: 500 `internal`.
 */

/** The caller's mistake: answered with `code`'s status and `items` (the registry's default item when absent). */
export class CallerError extends Error {
  constructor(
    readonly code: Exclude<ErrorCode, 'internal' | 'unavailable' | 'overloaded'>,
    readonly items?: ErrorItem[],
  ) {
    super(items?.[0]?.message ?? ErrorCodes[code].message);
    this.name = 'CallerError';
  }
}

/** A dependency is down or too slow: the call may succeed if retried after `retryAfter` seconds. */
export class UnavailableError extends Error {
  constructor(
    message: string,
    readonly retryAfter = 1,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'UnavailableError';
  }
}

/**
 * Buffered writes refused before Redis is full (docs/api.md#errors): Redis is past its memory
 * watermark and the gateway's spill journal cannot take them either. `message` says why.
 */
export class OverloadedError extends Error {
  constructor(
    message: string,
    readonly retryAfter: number,
  ) {
    super(message);
    this.name = 'OverloadedError';
  }
}
