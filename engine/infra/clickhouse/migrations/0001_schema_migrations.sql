-- 0001: the ledger of applied migrations (engine/infra/clickhouse/migrations.ts).
-- The runner executes this file before reading the ledger, so it must stay idempotent.
-- One row per applied version; two runners racing may both record a version: the insert carries
-- the deduplication token `schema_migrations:<version>` (dropped as a duplicate thanks to the
-- window below) and ReplacingMergeTree keyed by version collapses whatever slips through, so
-- reads use FINAL. ORDER BY version: the only query is "all versions, in order".
CREATE TABLE IF NOT EXISTS schema_migrations
(
    version UInt32,
    name String,
    checksum String,
    applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
ORDER BY version
SETTINGS non_replicated_deduplication_window = 1000;
