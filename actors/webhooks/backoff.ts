import type { Config } from '../../schemas/config.ts';

/** How a failing endpoint is retried (docs/api.md#webhooks). */
export interface Backoff {
  /** Wait before the first retry, ms; it doubles per failure in a row. */
  baseMs: number;
  /** Longest wait the doubling reaches, ms. */
  maxMs: number;
  /** Failing without a success this long disables the endpoint, ms. */
  windowMs: number;
}

export function backoffOf(config: Pick<Config, 'WEBHOOK_BACKOFF_MS' | 'WEBHOOK_BACKOFF_MAX_MS' | 'WEBHOOK_RETRY_WINDOW_MS'>): Backoff {
  return { baseMs: config.WEBHOOK_BACKOFF_MS, maxMs: config.WEBHOOK_BACKOFF_MAX_MS, windowMs: config.WEBHOOK_RETRY_WINDOW_MS };
}

/**
 * The wait after the `failures`-th failure in a row: exponential, capped, with jitter over its
 * upper half so that endpoints failing together do not come back together; at least what the
 * receiver's Retry-After asked for, within the retry window.
 */
export function backoffMs(backoff: Backoff, failures: number, retryAfterMs?: number, random = Math.random): number {
  const ceiling = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.min(Math.max(failures - 1, 0), 30));
  const jittered = Math.round(ceiling / 2 + random() * (ceiling / 2));
  return Math.max(jittered, Math.min(retryAfterMs ?? 0, backoff.windowMs));
}
