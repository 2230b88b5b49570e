-- 0004: events tracked for users (docs/api.md#users-and-events), inserted by the recorder from the changes stream
-- (schemas/changes.ts EventChange). `properties` is the JSON text of the event's properties;
-- `stream_id` is the change's id, so (project, external_id, stream_id) identifies a row.
--
-- Why ORDER BY (project, at, external_id, stream_id):
-- * GET /api/events lists one project newest first with optional external_id, name, since,
--   until; the cursor is (at, external_id, stream_id), the sort key itself, so pages are read in
--   key order and never repeat or skip a row.
-- * Filter resolution (docs/api.md#conditions "performed N at least C times within H hours") reads the last
--   H hours of one project: a primary-key range; the name and external_id bloom filters then skip
--   granules without the wanted values.
-- non_replicated_deduplication_window: redelivered batches are dropped by their token.
CREATE TABLE IF NOT EXISTS events
(
    project LowCardinality(String),
    external_id String,
    name String,
    properties String,
    idempotency_key Nullable(String),
    stream_id String,
    at DateTime64(3, 'UTC'),
    INDEX idx_name name TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_external_id external_id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(at)
ORDER BY (project, at, external_id, stream_id)
SETTINGS non_replicated_deduplication_window = 10000;
