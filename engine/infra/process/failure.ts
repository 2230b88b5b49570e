import { CallerError, OverloadedError, UnavailableError } from '../../../schemas/errors.ts';

/**
 * What a thrown value is, by kind: the caller's error (4xx at the gateway), unavailability (a
 * dependency unreachable or too slow: a 503 with Retry-After there, a wait and a retry in a
 * worker) or a bug. What counts as unavailable is listed in docs/architecture.md, "Errors by kind".
 */

export type Failure =
  | { kind: 'caller'; error: CallerError }
  | { kind: 'overloaded'; error: OverloadedError }
  | { kind: 'unavailable'; retryAfter: number }
  | { kind: 'bug' };

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
/** @clickhouse/client's request timeout. */
const clickHouseMessages = ['Timeout error.'];

interface Described {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  type?: unknown;
  syscall?: unknown;
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

/** True for an error that says a dependency could not answer now: a 503 at the gateway, a retry in a worker. */
export function isUnavailable(err: unknown): boolean {
  return classify(err).kind === 'unavailable';
}

function unreachable({ name, message, code, type, syscall }: Described): boolean {
  const text = typeof message === 'string' ? message : '';
  if (typeof code === 'string' && networkCodes.has(code)) return true;
  // A Unix socket whose server is gone with it: the embedded engine's process, stopped or restarting.
  if (code === 'ENOENT' && syscall === 'connect') return true;
  if (typeof type === 'string' && clickHouseTypes.has(type)) return true;
  if (name === 'TimeoutError' || name === 'MaxRetriesPerRequestError' || name === 'ClusterAllFailedError') return true;
  if (name === 'ReplyError' && redisReplies.test(text)) return true;
  return redisMessages.some((m) => text.startsWith(m)) || clickHouseMessages.some((m) => text.startsWith(m));
}
