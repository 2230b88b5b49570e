import { randomUUID } from 'node:crypto';
import type { Logger } from '../../engine/log.ts';
import { CallerError, ErrorCodes, OverloadedError, UnavailableError, type ErrorCode, type ErrorItem } from '../../schemas/errors.ts';

/**
 * The one catch boundary of the gateway: whatever a handler throws is classified once, here, as
 * the caller's error (4xx), unavailability (503 with Retry-After: a dependency unreachable or too
 * slow, and nothing else) or a bug (500 `internal`, its error_id on the log line with the stack).
 * What counts as unavailable is listed in docs/architecture.md, "Errors by kind".
 */

export type Failure =
  | { kind: 'caller'; error: CallerError }
  | { kind: 'overloaded'; error: OverloadedError }
  | { kind: 'unavailable'; retryAfter: number }
  | { kind: 'bug' };

/** How to answer a failure: the code, its items (the registry's default item when absent), Retry-After seconds. */
export interface Outcome {
  code: ErrorCode;
  items?: ErrorItem[];
  retryAfter?: number;
}

const networkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'EHOSTDOWN', 'ENETUNREACH', 'ENETDOWN', 'ENOTFOUND', 'EAI_AGAIN']);
/** Messages ioredis rejects commands with while it cannot reach Redis (they carry no code). */
const redisMessages = [
  'Connection is closed.',
  'Command timed out',
  "Stream isn't writeable",
  'Reached the max retries per request limit',
  'Socket timeout',
  'None of startup nodes is available',
  'Failed to refresh slots cache',
  'Cluster is disconnect',
  "Cluster isn't ready",
  'Node is disconnected',
  'Too many Cluster redirections',
];
const redisReplies = /^(LOADING|BUSY|TRYAGAIN|CLUSTERDOWN|MASTERDOWN|READONLY|NOREPLICAS|OOM)\b/;
/** `type` of a ClickHouseError (@clickhouse/client parses it from the exception text). */
const clickHouseTypes = new Set([
  'TIMEOUT_EXCEEDED',
  'SOCKET_TIMEOUT',
  'NETWORK_ERROR',
  'ALL_CONNECTION_TRIES_FAILED',
  'TOO_MANY_SIMULTANEOUS_QUERIES',
  'SERVER_OVERLOADED',
  'MEMORY_LIMIT_EXCEEDED',
  'TOO_MANY_PARTS',
  'TABLE_IS_READ_ONLY',
  'QUERY_WAS_CANCELLED',
  'KEEPER_EXCEPTION',
]);
const chdbCodes = new Set(['CHDB_CONNECTION', 'CHDB_CLOSED', 'CHDB_TIMEOUT']);
/** @clickhouse/client's request timeout, and the embedded connection after close(). */
const clickHouseMessages = ['Timeout error.', 'ChdbConnection is closed'];

interface Described {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  type?: unknown;
  retryAfter?: unknown;
  cause?: unknown;
}

/** The kind of a thrown value, from it and its causes. */
export function classify(err: unknown): Failure {
  const seen = new Set<unknown>();
  for (let e: unknown = err; typeof e === 'object' && e !== null && !seen.has(e); e = (e as Described).cause) {
    seen.add(e);
    if (e instanceof CallerError) return { kind: 'caller', error: e };
    if (e instanceof OverloadedError) return { kind: 'overloaded', error: e };
    const retryAfter = (e as Described).retryAfter;
    if (e instanceof UnavailableError || (typeof retryAfter === 'number' && retryAfter > 0 && Number.isFinite(retryAfter))) {
      return { kind: 'unavailable', retryAfter: typeof retryAfter === 'number' ? Math.ceil(retryAfter) : 1 };
    }
    if (unreachable(e as Described)) return { kind: 'unavailable', retryAfter: 1 };
  }
  return { kind: 'bug' };
}

/** True for an error that says a dependency could not answer now (a 503 at the boundary). */
export function isUnavailable(err: unknown): boolean {
  return classify(err).kind === 'unavailable';
}

function unreachable({ name, message, code, type }: Described): boolean {
  const text = typeof message === 'string' ? message : '';
  if (typeof code === 'string' && (networkCodes.has(code) || chdbCodes.has(code))) return true;
  if (typeof type === 'string' && clickHouseTypes.has(type)) return true;
  if (name === 'TimeoutError' || name === 'MaxRetriesPerRequestError' || name === 'ClusterAllFailedError') return true;
  if (name === 'ReplyError' && redisReplies.test(text)) return true;
  return redisMessages.some((m) => text.startsWith(m)) || clickHouseMessages.some((m) => text.startsWith(m));
}

/** Most one unavailability warning a second, so an outage does not flood the log. */
const WARN_EVERY_MS = 1000;

/** Classifies, logs by kind and says how to answer; one per gateway (GatewayDeps.failures). */
export class Failures {
  private lastWarn = 0;

  constructor(private readonly log: Logger) {}

  /**
   * What `what` (a route, a frame, a lookup) failed with, as an answer. A caller error is not
   * logged; unavailability is a rate-limited warning; a bug is an error line with the stack and a
   * fresh error_id, which the answer carries.
   */
  outcome(what: string, err: unknown): Outcome {
    const failure = classify(err);
    switch (failure.kind) {
      case 'caller':
        return failure.error.items === undefined ? { code: failure.error.code } : { code: failure.error.code, items: failure.error.items };
      case 'overloaded':
        this.warn(what, err);
        return { code: 'overloaded', items: [{ code: 'overloaded', message: failure.error.message }], retryAfter: failure.error.retryAfter };
      case 'unavailable':
        this.warn(what, err);
        return { code: 'unavailable', retryAfter: failure.retryAfter };
      case 'bug': {
        const errorId = randomUUID();
        this.log.error(`${what} failed`, { error_id: errorId, err: err instanceof Error ? err : new Error(`non-error thrown: ${String(err)}`) });
        return { code: 'internal', items: [{ code: 'internal', message: ErrorCodes.internal.message, error_id: errorId }] };
      }
    }
  }

  /** Logs a failure nobody is waiting for an answer to, by its kind. */
  report(what: string, err: unknown): void {
    this.outcome(what, err);
  }

  private warn(what: string, err: unknown): void {
    const now = Date.now();
    if (now - this.lastWarn < WARN_EVERY_MS) return;
    this.lastWarn = now;
    this.log.warn(`${what} failed`, { err: err instanceof Error ? err.message : String(err) });
  }
}
