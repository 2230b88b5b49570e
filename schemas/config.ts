import Type, { type Static } from 'typebox';

/**
 * Process configuration, read once from the environment at start (see engine/infra/process/config.ts).
 * Every option is documented here with its default. Durations are milliseconds.
 */
export const ConfigSchema = Type.Object(
  {
    /** Redis URL; a comma-separated list of redis:// nodes means Redis Cluster. */
    REDIS_URL: Type.String({ default: 'redis://127.0.0.1:6379', pattern: '^rediss?://' }),
    /** ClickHouse server URL; unset means the embedded engine under DATA_DIR. */
    CLICKHOUSE_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
    /**
     * The embedded engine's process runs in a sandbox (bubblewrap): `auto` when it can, else
     * without it and a warning; `required` refuses to run without it; `off` never (docs/sql.md#layers).
     */
    CLICKHOUSE_SANDBOX: Type.Union([Type.Literal('auto'), Type.Literal('required'), Type.Literal('off')], { default: 'auto' }),
    /** Local data: embedded ClickHouse, spill journal, demo project. */
    DATA_DIR: Type.String({ default: './.data', minLength: 1 }),
    /** HTTP port of the gateway; 0 picks a free one (printed at start). */
    PORT: Type.Integer({ default: 8080, minimum: 0, maximum: 65535 }),
    /**
     * The gateway's HTTP server: `uws` (uWebSockets.js), `node` (node:http with ws), or `auto`:
     * uws when its native addon loads for this Node and platform, else node.
     */
    HTTP_SERVER: Type.Union([Type.Literal('auto'), Type.Literal('uws'), Type.Literal('node')], { default: 'auto' }),
    /** Interface the gateway binds. */
    HOST: Type.String({ default: '127.0.0.1', minLength: 1 }),
    /** Number of ingest partitions; fixed for the life of a deployment. */
    PARTITIONS: Type.Integer({ default: 64, minimum: 1, maximum: 16384 }),
    LOG_LEVEL: Type.Union([Type.Literal('debug'), Type.Literal('info'), Type.Literal('warn'), Type.Literal('error')], {
      default: 'info',
    }),
    /** Prefix of every Redis key this deployment owns (tests use one per test). */
    KEY_PREFIX: Type.String({ default: 'svc:', pattern: '^[A-Za-z0-9_.:-]*$' }),
    /** Partition lease time; a dead worker's partitions move after at most this long. */
    LEASE_MS: Type.Integer({ default: 3000, minimum: 200 }),
    /** Most ingest entries one partition actor applies in one Lua call. */
    APPLY_BATCH: Type.Integer({ default: 256, minimum: 1, maximum: 10000 }),
    /**
     * After a batch shorter than APPLY_BATCH, how long a partition actor waits before reading again
     * while its process's event loop is over 90% busy, ms (0: never). An idle process reads at once.
     */
    APPLY_LINGER_MS: Type.Integer({ default: 20, minimum: 0, maximum: 1000 }),
    /** How long a gateway trusts a key or project lookup; revocation is seen within this. */
    KEY_CACHE_MS: Type.Integer({ default: 2000, minimum: 0, maximum: 5000 }),
    /** Longest a buffered append or a consent write may wait on Redis before the gateway answers 503. */
    REDIS_TIMEOUT_MS: Type.Integer({ default: 2000, minimum: 50 }),
    /** Longest any command of a worker may wait on a Redis Cluster node (blocking reads excepted), ms. */
    REDIS_CLUSTER_TIMEOUT_MS: Type.Integer({ default: 10000, minimum: 100 }),
    /** On a Redis Cluster, how many replicas a buffered append waits for (WAIT) before its 202. */
    REDIS_WAIT_REPLICAS: Type.Integer({ default: 0, minimum: 0, maximum: 5 }),
    /** Most bytes the gateway's spill journal (DATA_DIR/spill) holds while Redis is unreachable; past it, 503. */
    SPILL_MAX_BYTES: Type.Integer({ default: 1073741824, minimum: 0 }),
    /** Past this share of Redis's memory limit (percent), gateways keep buffered writes in their spill journal. */
    ADMISSION_HIGH_PERCENT: Type.Integer({ default: 80, minimum: 1, maximum: 100 }),
    /** Below this share (percent, under ADMISSION_HIGH_PERCENT), gateways replay their journal and append to Redis again. */
    ADMISSION_LOW_PERCENT: Type.Integer({ default: 70, minimum: 0, maximum: 99 }),
    /** Redis's memory limit in bytes when it has no maxmemory; 0: the machine's memory as Redis reports it. */
    REDIS_MEMORY_BUDGET: Type.Integer({ default: 0, minimum: 0 }),
    /** Development and tests: every answer is checked against its route's declared schema; one that breaks it is a 500 and an error log line. */
    CHECK_ANSWERS: Type.Boolean({ default: false }),
    /** Extra CA certificate (PEM file) trusted for provider connections, say a local simulator's. */
    PROVIDER_CA_FILE: Type.Optional(Type.String({ minLength: 1 })),
    /**
     * Loopback, private, link-local and metadata addresses are allowed as Web Push endpoints and
     * webhook URLs: for local simulators only (docs/api.md#outbound-urls).
     */
    OUTBOUND_ALLOW_PRIVATE: Type.Boolean({ default: false }),
    /** Comma-separated hosts (exact, or `.suffix`) Web Push endpoints must name; unset: any public host. */
    WEBPUSH_HOSTS: Type.Optional(Type.String({ minLength: 1 })),
    /** Longest one provider request may take, from the send until its whole answer is read, ms; past it the attempt is a `timeout`. */
    PROVIDER_TIMEOUT_MS: Type.Integer({ default: 10000, minimum: 100, maximum: 120000 }),
    /** Interface the SQL listener (the `sql` role, docs/sql.md) binds; never the gateway's port. */
    SQL_HOST: Type.String({ default: '127.0.0.1', minLength: 1 }),
    /** Port of the SQL listener (ClickHouse's HTTP interface, read-only, operator keys); 0 turns it off. */
    SQL_PORT: Type.Integer({ default: 8124, minimum: 0, maximum: 65535 }),
    /**
     * With CLICKHOUSE_URL: the server URL (user, password, database) the SQL listener's queries go
     * to, for a user of its own with a read-only profile (docs/sql.md); unset: CLICKHOUSE_URL.
     */
    SQL_CLICKHOUSE_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
    /** An operator key: `engine sql` sends it to the running engine's SQL listener. */
    SQL_KEY: Type.Optional(Type.String({ minLength: 1 })),
    /** Longest an SQL query may run, seconds (max_execution_time); a query may lower it, never raise it. */
    SQL_MAX_EXECUTION_TIME: Type.Integer({ default: 30, minimum: 1, maximum: 3600 }),
    /** Most memory one SQL query may use, bytes (max_memory_usage); a query may lower it. */
    SQL_MAX_MEMORY_USAGE: Type.Integer({ default: 1073741824, minimum: 1048576 }),
    /** Most rows one SQL query may read from tables (max_rows_to_read); a query may lower it. */
    SQL_MAX_ROWS_TO_READ: Type.Integer({ default: 1000000000, minimum: 1 }),
    /** Most rows in one SQL answer (max_result_rows); a query may lower it. */
    SQL_MAX_RESULT_ROWS: Type.Integer({ default: 1000000, minimum: 1 }),
    /** Most bytes of one SQL result as ClickHouse holds it in memory (max_result_bytes); a query may lower it. */
    SQL_MAX_RESULT_BYTES: Type.Integer({ default: 104857600, minimum: 1 }),
    /** SQL queries one listener runs at once; past it, ClickHouse's error 202 (too many simultaneous queries). */
    SQL_MAX_CONCURRENT_QUERIES: Type.Integer({ default: 2, minimum: 1, maximum: 64 }),
    /** Longest one webhook POST may take until its whole answer is read, ms; past it the attempt failed (`timeout`). */
    WEBHOOK_TIMEOUT_MS: Type.Integer({ default: 10000, minimum: 100, maximum: 120000 }),
    /** Wait before the first retry of a failing webhook endpoint, ms; it doubles per failure, with jitter. */
    WEBHOOK_BACKOFF_MS: Type.Integer({ default: 1000, minimum: 10 }),
    /** Longest wait between two attempts at a failing webhook endpoint, ms (a Retry-After may ask for longer). */
    WEBHOOK_BACKOFF_MAX_MS: Type.Integer({ default: 3600000, minimum: 10 }),
    /** How long a webhook endpoint may fail without a success before it is disabled, ms (default 25 h). */
    WEBHOOK_RETRY_WINDOW_MS: Type.Integer({ default: 90000000, minimum: 100 }),
    /** Most events one webhook endpoint's queue holds; past it the endpoint is disabled (`backlog_full`). */
    WEBHOOK_QUEUE_MAX: Type.Integer({ default: 1000000, minimum: 1 }),
    /** Most events in flight to one webhook endpoint (events of one notification go one after another). */
    WEBHOOK_CONCURRENCY: Type.Integer({ default: 16, minimum: 1, maximum: 256 }),
    /** Grace period for in-flight work on SIGTERM/SIGINT. */
    SHUTDOWN_MS: Type.Integer({ default: 5000, minimum: 0 }),
  },
  { additionalProperties: false },
);

export type Config = Readonly<Static<typeof ConfigSchema>>;
