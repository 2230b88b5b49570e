import type { Caller } from '../server/auth.ts';
import type { RateLimiter } from '../server/rate-limit.ts';

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
