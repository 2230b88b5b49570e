import type { Caller } from './auth.ts';
import type { GatewayDeps } from './deps.ts';
import type { Exchange } from './exchange.ts';
import { rateLimitedItem } from './rate-limit.ts';
import type { KeyAuth } from './route.ts';

/**
 * The key check of a route with a key, the same for an HTTP call and a WebSocket upgrade:
 * draining (503), no key (401 missing_key), the lookup (a failure answered by its kind), then
 * `found` with the key's caller and the key. A caller the route admits first takes a rate-limit
 * token (429 when none); an unknown or revoked key (null) and a key of the wrong type go to
 * `found` as they are, for admitted() to answer once the request is read.
 */
export function lookUpCaller(
  deps: Pick<GatewayDeps, 'tracker' | 'callers' | 'limiter' | 'failures'>,
  ex: Exchange,
  auth: KeyAuth,
  key: string | null,
  found: (caller: Caller | null, key: string) => void,
): void {
  if (deps.tracker.draining) return ex.unavailable();
  if (key === null) return ex.fail('missing_key');
  const admit = (caller: Caller | null): void => (caller === null || !typeAllowed(auth, caller) ? found(caller, key) : throttle(deps, ex, caller, () => found(caller, key)));
  const cached = deps.callers.peek(key);
  if (cached !== undefined) return admit(cached);
  deps.callers.load(key).then(admit, (err: unknown) => ex.answer(deps.failures.outcome('key lookup', err)));
}

/** 401 for an unknown or revoked key, 403 for an SDK key on a REST-only route; true when the caller may go on. */
export function admitted(ex: Exchange, auth: KeyAuth, caller: Caller | null): caller is Caller {
  if (caller === null) ex.fail('invalid_key');
  else if (!typeAllowed(auth, caller)) ex.fail('wrong_key_type');
  else return true;
  return false;
}

/**
 * Runs `work` (a handler) at the catch boundary: what it throws or rejects with is classified once
 * (gateway/server/failure.ts) and answered, unless the exchange is already closed; a bug is logged either way.
 */
export function guarded(deps: Pick<GatewayDeps, 'failures'>, ex: Exchange, what: string, work: () => void | Promise<void>): void {
  const settle = (err: unknown): void => ex.answer(deps.failures.outcome(what, err));
  try {
    const done = work();
    if (done) done.catch(settle);
  } catch (err) {
    settle(err);
  }
}

/** Any project key for an `sdk` route, a REST key only for a `rest` one (docs/api.md#keys-and-projects). */
function typeAllowed(auth: KeyAuth, caller: Caller): boolean {
  return auth === 'sdk' || caller.type === 'rest';
}

/**
 * Calls `go` once the caller may proceed: at once when its project has no limit, else after
 * taking a token. An empty bucket is answered 429 with Retry-After; a bug in the take by its kind.
 */
function throttle(deps: Pick<GatewayDeps, 'limiter' | 'failures'>, ex: Exchange, caller: Caller, go: () => void): void {
  const taking = deps.limiter.take(caller);
  if (taking === null) return go();
  taking
    .then((wait) => (wait === 0 ? go() : ex.fail('rate_limited', [rateLimitedItem(wait)], [['Retry-After', String(wait)]])))
    .catch((err: unknown) => ex.answer(deps.failures.outcome('rate limit', err)));
}
