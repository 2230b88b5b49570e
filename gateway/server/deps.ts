import type { Config } from '../../schemas/config.ts';
import type { IngestEntry } from '../../schemas/ingest.ts';
import type { ClickHouseStore } from '../../engine/clickhouse/store.ts';
import type { Logger } from '../../engine/log.ts';
import type { Metrics } from '../../engine/metrics.ts';
import type { RedisClient } from '../../engine/redis.ts';
import type { Topology } from '../../engine/topology.ts';
import type { CallerCache } from './auth.ts';
import type { Failures } from './failure.ts';
import type { RateLimiter } from './rate-limit.ts';

/** What every route group of the gateway gets (built once in gateway/role.ts). */
export interface GatewayDeps {
  config: Config;
  log: Logger;
  metrics: Metrics;
  /** Commands time out after REDIS_TIMEOUT_MS, so a Redis outage becomes a 503, never a hang. */
  redis: RedisClient;
  topology: Topology;
  callers: CallerCache;
  /** The per-key rate limit (API.md section 9), checked once the key is known. */
  limiter: RateLimiter;
  tracker: Tracker;
  ingest: IngestSink;
  /** The process's ClickHouse (query routes, /readyz); what makes it unreachable is a 503 (gateway/failure.ts). */
  clickhouse: Pick<ClickHouseStore, 'get' | 'ping'>;
  /** The catch boundary: every failure of a request is classified, logged and answered there. */
  failures: Failures;
}

/**
 * Where buffered writes become durable (DESIGN.md invariant 1): resolves once every entry is
 * appended, in the given order; rejects with an error carrying `retryAfter` when that cannot be
 * confirmed (503); any other rejection is a bug (500, gateway/failure.ts).
 * gateway/ingest-writer.ts IngestWriter fits this shape (Redis, else the spill journal).
 */
export interface IngestSink {
  write(entries: IngestEntry[]): Promise<void>;
}

/** In-flight requests and the draining switch of graceful shutdown (STYLE.md 10). */
export class Tracker {
  inflight = 0;
  draining = false;
  private idle: (() => void) | null = null;

  start(): void {
    this.inflight++;
  }

  done(): void {
    this.inflight--;
    if (this.inflight === 0 && this.idle) this.idle();
  }

  /** Resolves when no request is in flight, or after `ms` at the latest. */
  whenIdle(ms: number): Promise<void> {
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.idle = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}
