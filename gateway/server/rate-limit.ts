import { scripts, type ScriptCommands } from '../../engine/infra/scripts/registry.ts';
import type { Topology } from '../../engine/infra/redis/topology.ts';
import type { ErrorItem } from '../../schemas/errors.ts';
import type { Caller } from './auth.ts';
import { classify } from '../../engine/infra/process/failure.ts';
import type { Failures } from './failure.ts';

/** What the limiter needs of Redis (a test may hand it a stand-in): the bucket script and whether the connection is up. */
export interface BucketStore extends Pick<ScriptCommands, 'takeToken'> {
  readonly status: string;
}

/**
 * The per-key rate limit: one token bucket per key in Redis (engine/infra/scripts/lua/takeToken-1.lua), shared
 * by every gateway. It fails open: while Redis cannot count, calls pass, since a 503 would refuse
 * the buffered writes the spill journal exists to take.
 */
export class RateLimiter {
  constructor(
    private readonly redis: BucketStore,
    private readonly topology: Pick<Topology, 'named'>,
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
    const bucket = this.topology.named(`rate:${caller.keyHash}`);
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
