import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

/** The process's Prometheus registry and the metrics every role shares (served at /metrics). */
export class Metrics {
  readonly registry = new Registry();

  /** HTTP requests by route pattern and status. */
  readonly requests = new Counter({
    name: 'svc_http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['route', 'status'] as const,
    registers: [this.registry],
  });

  /** The gateway's HTTP server (HTTP_SERVER): 1 for the one that serves. */
  readonly httpServer = new Gauge({
    name: 'svc_http_server_info',
    help: 'The HTTP server the gateway runs (uws or node), 1',
    labelNames: ['server'] as const,
    registers: [this.registry],
  });

  /** SDK writes durably appended to the ingest log. */
  readonly acceptedWrites = new Counter({
    name: 'svc_accepted_writes_total',
    help: 'SDK writes appended to the ingest log',
    registers: [this.registry],
  });

  /** Calls and WebSocket frames refused with rate_limited (429), by key type. */
  readonly rateLimited = new Counter({
    name: 'svc_rate_limited_total',
    help: 'Calls refused by the per-key rate limit, by key type',
    labelNames: ['key_type'] as const,
    registers: [this.registry],
  });

  /** Ingest entries applied by partition actors. */
  readonly appliedEntries = new Counter({
    name: 'svc_applied_entries_total',
    help: 'Ingest entries applied (skipped duplicates excluded)',
    registers: [this.registry],
  });

  /** Entries in the ingest log not yet delivered to or acknowledged by the apply group. */
  readonly ingestLag = new Gauge({
    name: 'svc_ingest_lag_entries',
    help: 'Ingest entries waiting to be applied, summed over partitions',
    registers: [this.registry],
  });

  /** Delivery records the live tail did not send to a connection that read too slowly (each told in a gap frame). */
  readonly liveDropped = new Counter({
    name: 'svc_live_records_dropped_total',
    help: 'Live tail records dropped for connections that read too slowly',
    registers: [this.registry],
  });

  /** Rows the recorder inserted into ClickHouse, by table (a redelivered batch counts again). */
  readonly recordedRows = new Counter({
    name: 'svc_recorded_rows_total',
    help: 'Rows inserted into ClickHouse by the recorder, by table',
    labelNames: ['table'] as const,
    registers: [this.registry],
  });

  /**
   * Entries deleted from a stream while still pending in a consumer group: read, never processed,
   * gone. Always a defect; each is also logged as an error.
   */
  readonly lostEntries = new Counter({
    name: 'svc_stream_entries_lost_total',
    help: 'Stream entries found deleted while pending in a consumer group, by group',
    labelNames: ['group'] as const,
    registers: [this.registry],
  });

  /** POSTs to webhook receivers, by outcome (`delivered`, `failed`). */
  readonly webhookAttempts = new Counter({
    name: 'svc_webhook_attempts_total',
    help: 'Webhook POSTs to receivers, by status',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });

  /** Webhook attempt records dropped because ClickHouse took none for longer than the buffer holds. */
  readonly webhookAttemptsDropped = new Counter({
    name: 'svc_webhook_attempt_records_dropped_total',
    help: 'Webhook attempt records dropped unrecorded: ClickHouse was away past the buffer',
    registers: [this.registry],
  });

  /** used_memory of Redis (of its fullest master on a Cluster), as a gateway last read it. */
  readonly redisMemoryUsed = new Gauge({
    name: 'svc_redis_memory_used_bytes',
    help: 'Redis used_memory (the fullest master on a Cluster), read by the gateway every second',
    registers: [this.registry],
  });

  /** The memory limit admission works against: maxmemory, else REDIS_MEMORY_BUDGET, else the machine's. */
  readonly redisMemoryLimit = new Gauge({
    name: 'svc_redis_memory_limit_bytes',
    help: 'Redis memory limit admission works against (maxmemory, else REDIS_MEMORY_BUDGET, else the machine)',
    registers: [this.registry],
  });

  /** The admission watermarks in bytes: past `high` buffered writes are held back, under `low` admitted again. */
  readonly admissionWatermark = new Gauge({
    name: 'svc_admission_watermark_bytes',
    help: 'Admission watermarks of Redis memory, bytes (level: high, low)',
    labelNames: ['level'] as const,
    registers: [this.registry],
  });

  /** 1 while this gateway holds buffered writes back from Redis (past the high watermark), else 0. */
  readonly admissionShedding = new Gauge({
    name: 'svc_admission_shedding',
    help: '1 while buffered writes go to the spill journal because Redis is past its high watermark',
    registers: [this.registry],
  });

  /**
   * Buffered writes answered 503, by reason: `unavailable` (Redis unreachable, the journal full or
   * failing), `overloaded` (Redis past its watermark, the journal full) or `live_state` (Redis past
   * its watermark, and draining the workers' backlog makes no room for more).
   */
  readonly refusedWrites = new Counter({
    name: 'svc_refused_writes_total',
    help: 'Buffered writes refused with 503, by reason (unavailable, overloaded, live_state)',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  /** Age of the oldest ingest entry not yet applied, seconds (0: none). */
  readonly oldestUnapplied = new Gauge({
    name: 'svc_oldest_unapplied_seconds',
    help: 'Age of the oldest ingest entry the apply workers have not acknowledged, seconds',
    registers: [this.registry],
  });

  /** Age of the oldest change or outcome not yet recorded in ClickHouse, seconds (0: none). */
  readonly oldestUnrecorded = new Gauge({
    name: 'svc_oldest_unrecorded_seconds',
    help: 'Age of the oldest changes or outcomes entry the recorder has not acknowledged, seconds',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }
}
