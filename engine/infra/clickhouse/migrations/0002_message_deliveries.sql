-- 0002: message_deliveries, one row per delivery attempt (docs/api.md#the-delivery-record, docs/architecture.md#every-attempt-recorded),
-- inserted by the recorder from the outcomes stream (schemas/outcomes.ts). Every MessageDelivery
-- field except `receipt`, which is read from `receipts` (latest per message and user); plus
-- `project` and `stream_id` (the outcomes stream entry the row came from).
--
-- Why this layout fits GET /api/deliveries and /stats:
-- * ORDER BY (project, at, id): every query is inside one project and a time range (since/until),
--   so the primary key prunes by project and time; "newest first" reads the key in reverse
--   (optimize_read_in_order), and the cursor is the pair (at, id), which is unique and follows
--   the sort key, so a page never repeats or skips a row while rows arrive.
-- * external_id and notification_id have high cardinality: bloom filters skip granules without
--   the value. status, channel, subscription_type and error_code have few values: set indexes
--   skip granules for rare ones (a failing error_code among many `sent`).
-- * PARTITION BY month keeps parts bounded and lets old months be dropped whole.
-- * stats group_by hour is toStartOfHour(at) over the same pruned range.
-- non_replicated_deduplication_window: a batch re-inserted with the same
-- insert_deduplication_token (a redelivered stream batch) is dropped (docs/architecture.md#clickhouse-one-client-two-modes).
CREATE TABLE IF NOT EXISTS message_deliveries
(
    project LowCardinality(String),
    id String,
    stream_id String,
    notification_id String,
    external_id String,
    channel LowCardinality(String),
    subscription_type LowCardinality(Nullable(String)),
    token_tail Nullable(String),
    attempt UInt16,
    status LowCardinality(String),
    error_code LowCardinality(Nullable(String)),
    hint Nullable(String),
    provider_message_id Nullable(String),
    latency_ms Nullable(UInt32),
    retrying Bool,
    at DateTime64(3, 'UTC'),
    INDEX idx_external_id external_id TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_notification_id notification_id TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_status status TYPE set(8) GRANULARITY 4,
    INDEX idx_channel channel TYPE set(8) GRANULARITY 4,
    INDEX idx_subscription_type subscription_type TYPE set(8) GRANULARITY 4,
    INDEX idx_error_code error_code TYPE set(256) GRANULARITY 4
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(at)
ORDER BY (project, at, id)
SETTINGS non_replicated_deduplication_window = 10000;
