import type { Config } from '../../schemas/config.ts';
import type { IngestEntry } from '../../schemas/ingest.ts';
import type { ClickHouseStore } from '../../engine/infra/clickhouse/store.ts';
import type { Logger } from '../../engine/infra/process/log.ts';
import type { Metrics } from '../../engine/infra/process/metrics.ts';
import type { RedisClient } from '../../engine/infra/redis/client.ts';
import type { Topology } from '../../engine/infra/redis/topology.ts';
import type { CallerCache } from './auth.ts';
import type { ServerName } from './choice.ts';
import type { Failures } from './failure.ts';
import type { RateLimiter } from './rate-limit.ts';
import type { Tracker } from './tracker.ts';

/** What every route group of the gateway gets (built once in gateway/role.ts). */
export interface GatewayDeps {
  config: Config;
  /** The HTTP server that serves (gateway/server/choice.ts), chosen before anything else starts. */
  server: ServerName;
  log: Logger;
  metrics: Metrics;
  /** Commands time out after REDIS_TIMEOUT_MS, so a Redis outage becomes a 503, never a hang. */
  redis: RedisClient;
  topology: Topology;
  callers: CallerCache;
  /** The per-key rate limit (docs/api.md#rate-limits-429-and-retry-after), checked once the key is known. */
  limiter: RateLimiter;
  tracker: Tracker;
  ingest: IngestSink;
  /** The process's ClickHouse (query routes, /readyz); what makes it unreachable is a 503 (gateway/server/failure.ts). */
  clickhouse: Pick<ClickHouseStore, 'get' | 'ping'>;
  /** The catch boundary: every failure of a request is classified, logged and answered there. */
  failures: Failures;
}

/**
 * Where buffered writes become durable (docs/api.md#buffered-writes-what-a-202-promises): resolves
 * once every entry is appended, in the given order; rejects with an error carrying `retryAfter`
 * when that cannot be confirmed (503); any other rejection is a bug (500, gateway/server/failure.ts).
 * gateway/ingest/writer.ts IngestWriter fits this shape (Redis, else the spill journal).
 */
export interface IngestSink {
  write(entries: IngestEntry[]): Promise<void>;
  /** Why it refuses buffered writes for overload now (`/readyz` answers 503 with it), or null. */
  refusing?(): string | null;
}
