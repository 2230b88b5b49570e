-- 0005: users, a mirror of the live user state in Redis used to resolve segments and filters
-- (docs/api.md#filters-and-segments). Each row is a whole snapshot of one user after a change; the newest `version` wins
-- (ReplacingMergeTree), so readers use FINAL. `version` must grow with every applied change of a
-- user (the recorder derives it from the changes stream ID; one user lives in one partition
-- stream, so its IDs are ordered). `stream_id` is that change's id.
-- * tags: every tag as text; tag_numbers: the tags whose value is a number, so `>` and `<` compare
--   numbers as numbers and text as text.
-- * subscription_types: the types with a live subscription (filters `subscription`, segment All).
-- * opted_out: the channels the user opted out of (consent).
--
-- Why ORDER BY (project, external_id): FINAL collapses versions along the key, segment resolution
-- scans one project, and an audience streams in external_id order, so a chunked read resumes
-- with `external_id > last`. The bloom filter over tag keys skips granules for `exists`.
-- non_replicated_deduplication_window: redelivered batches are dropped by their token.
CREATE TABLE IF NOT EXISTS users
(
    project LowCardinality(String),
    external_id String,
    tags Map(String, String),
    tag_numbers Map(String, Float64),
    subscription_types Array(LowCardinality(String)),
    opted_out Array(LowCardinality(String)),
    created_at DateTime64(3, 'UTC'),
    updated_at DateTime64(3, 'UTC'),
    version UInt64,
    stream_id String,
    INDEX idx_tag_keys mapKeys(tags) TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (project, external_id)
SETTINGS non_replicated_deduplication_window = 10000;
