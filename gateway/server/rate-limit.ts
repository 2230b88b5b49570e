import { scripts, type ScriptCommands } from '../../engine/scripts.ts';
import type { Topology } from '../../engine/topology.ts';
import type { ErrorItem } from '../../schemas/errors.ts';
import type { Caller } from './auth.ts';
import type { GatewayDeps } from './deps.ts';
import { classify, type Failures } from './failure.ts';
import type { Exchange } from './exchange.ts';

/** What the limiter needs of Redis (STYLE.md 7): the bucket script and whether the connection is up. */
export interface BucketStore extends Pick<ScriptCommands, 'takeToken'> {
  readonly status: string;
}

/**
 * The per-key rate limit: one token bucket per key in Redis (engine/lua/takeToken-1.lua), shared
 * by every gateway. It fails open: while Redis cannot count, calls pass, since a 503 would refuse
 * the buffered writes the spill journal exists to take.
 */
export class RateLimiter {
  constructor(
    private readonly redis: BucketStore,
    private readonly topology: Pick<Topology, 'rateBucket'>,
    private readonly refused: { labels(keyType: string): { inc(): void } },
    private readonly failures: Pick<Failures, 'report'>,
  ) {}

  /**
   * Takes a token from the caller's bucket. Null when its project has no limit (nothing to wait
   * for); else resolves with 0 to go on or the whole seconds until a token is there (at least 1,
   * for Retry-After). Rejects only with a bug: unavailability resolves with 0.
   */
  take(caller: Caller): Promise<number> | null {
    const limit = caller.rateLimit;
    if (limit === null) return null;
    // Not connected: a command would wait in the offline queue until it times out; pass now.
    if (this.redis.status !== 'ready') return Promise.resolve(0);
    const bucket = this.topology.rateBucket(caller.keyHash);
    return scripts.takeToken(this.redis, { keys: { bucket }, args: { perSecond: limit.per_second, burst: limit.burst } }).then(
      ({ waitMs }) => {
        if (waitMs <= 0) return 0;
        this.refused.labels(caller.type).inc();
        return Math.max(1, Math.ceil(waitMs / 1000));
      },
      (err: unknown) => {
        if (classify(err).kind !== 'unavailable') throw err;
        this.failures.report('rate limit', err);
        return 0;
      },
    );
  }
}

/** The error item of a refused call or frame. */
export function rateLimitedItem(seconds: number): ErrorItem {
  return { code: 'rate_limited', message: `Over the project's rate limit for this key; retry after ${seconds} s.` };
}

/**
 * Calls `go` once the caller may proceed: at once when its project has no limit, else after
 * taking a token. An empty bucket is answered 429 with Retry-After; a bug in the take by its kind.
 */
export function throttle(deps: Pick<GatewayDeps, 'limiter' | 'failures'>, ex: Exchange, caller: Caller, go: () => void): void {
  const taking = deps.limiter.take(caller);
  if (taking === null) return go();
  taking
    .then((wait) => (wait === 0 ? go() : ex.fail('rate_limited', [rateLimitedItem(wait)], [['Retry-After', String(wait)]])))
    .catch((err: unknown) => ex.answer(deps.failures.outcome('rate limit', err)));
}

/**
 * The takes of one WebSocket's frames, decided in arrival order: a frame's operation starts only
 * after every earlier frame's take was decided, so appends keep the connection's order while the
 * takes themselves are pipelined. Without a limit (and nothing waiting) a frame is decided at once.
 */
export class OrderedTakes {
  private queue: Promise<void> = Promise.resolve();
  private waiting = 0;

  constructor(
    private readonly limiter: Pick<RateLimiter, 'take'>,
    private readonly report: (err: unknown) => void,
  ) {}

  /** `decided` gets 0 to go on or the seconds to wait; `failed` what the take failed with (a bug). */
  take(caller: Caller, decided: (wait: number) => void, failed: (err: unknown) => void): void {
    const taking = this.limiter.take(caller);
    if (taking === null && this.waiting === 0) return decided(0);
    this.waiting++;
    const decision = taking ?? Promise.resolve(0);
    this.queue = this.queue
      .then(() => decision.then(decided, failed))
      .catch(this.report)
      .finally(() => this.waiting--);
  }
}
