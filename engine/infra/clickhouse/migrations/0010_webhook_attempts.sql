-- 0010: webhook_attempts, one row per POST to a webhook endpoint (schemas/webhooks.ts
-- WebhookAttemptRow), inserted by the webhooks role's senders (insertWebhookAttempts) after each
-- batch of attempts. `response_code` is 0 when no answer came; `error` is '' when delivered.
--
-- Why this layout fits GET /api/webhooks/{id}/attempts (docs/api.md#webhook-attempts):
-- * ORDER BY (project, webhook_id, at, event_id, attempt): every read is of one endpoint of one
--   project, newest first, so the key prunes to that endpoint and reads its range in reverse; the
--   cursor is (at, event_id, attempt), which is unique within an endpoint (one event's attempts at
--   one endpoint are numbered) and follows the sort key, so a page never repeats or skips a row.
-- * status and event_type have few values: set indexes skip granules without a rare one (the
--   failures among many deliveries).
-- * PARTITION BY month keeps parts bounded and lets old months be dropped whole, as for deliveries.
-- non_replicated_deduplication_window: a batch re-inserted with the same
-- insert_deduplication_token is dropped (docs/architecture.md#clickhouse-one-client-two-modes).
CREATE TABLE IF NOT EXISTS webhook_attempts
(
    project LowCardinality(String),
    webhook_id String,
    event_id String,
    event_type LowCardinality(String),
    notification_id String,
    attempt UInt16,
    status LowCardinality(String),
    response_code UInt16,
    latency_ms UInt32,
    error String,
    at DateTime64(3, 'UTC'),
    INDEX idx_status status TYPE set(4) GRANULARITY 4,
    INDEX idx_event_type event_type TYPE set(16) GRANULARITY 4
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(at)
ORDER BY (project, webhook_id, at, event_id, attempt)
SETTINGS non_replicated_deduplication_window = 10000;
