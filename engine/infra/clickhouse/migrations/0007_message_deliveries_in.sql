-- 0007: message_deliveries_in, where the recorder inserts delivery outcomes (schemas/outcomes.ts),
-- and the materialized view that moves each inserted block into message_deliveries.
--
-- Why a landing table: the outcomes entries arrive as JSON text, and ClickHouse parses text into
-- LowCardinality and LowCardinality(Nullable) columns row by row, which took 50 ms of the 60-90 ms
-- an insert of 10k outcomes cost on a 2-core machine. Parsed into plain String columns here and
-- converted column-wise by the view, the same insert takes about 40 ms (the recorder's goal of
-- 200k rows/s). The Null engine keeps nothing: every row lives in message_deliveries only.
--
-- Why the constraints: the recorder hands the entries' own JSON to ClickHouse without parsing it
-- in JavaScript (engine/infra/clickhouse/insert.ts, actors/recorder/sink.ts), so the checks of
-- schemas/outcomes.ts that the column types do not make are made here; a batch with a violating
-- or unparsable entry fails whole, and the recorder then checks each entry itself, skips the bad
-- ones and inserts the rest.
--
-- Deduplication: an insert's insert_deduplication_token reaches the view's block, and
-- message_deliveries (non_replicated_deduplication_window) drops a block whose token it has seen,
-- so a batch redelivered after a crash still lands once (the recorder also sets
-- deduplicate_blocks_in_dependent_materialized_views on each insert, for servers where it is off).
CREATE TABLE IF NOT EXISTS message_deliveries_in
(
    project String,
    id String,
    stream_id String,
    notification_id String,
    external_id String,
    channel String,
    subscription_type Nullable(String),
    token_tail Nullable(String),
    attempt UInt16,
    status String,
    error_code Nullable(String),
    hint Nullable(String),
    provider_message_id Nullable(String),
    latency_ms Nullable(UInt32),
    retrying Bool,
    at DateTime64(3, 'UTC'),
    CONSTRAINT known_values CHECK status IN ('sent', 'failed', 'skipped')
        AND channel IN ('PUSH', 'SMS', 'EMAIL')
        AND (subscription_type IS NULL OR subscription_type IN ('IOS_PUSH', 'ANDROID_PUSH', 'EMAIL', 'SMS', 'WEB_PUSH')),
    CONSTRAINT required_text CHECK id != '' AND project != '' AND notification_id != '' AND external_id != ''
        AND (error_code IS NULL OR error_code != ''),
    CONSTRAINT lengths CHECK lengthUTF8(external_id) <= 128 AND (token_tail IS NULL OR lengthUTF8(token_tail) <= 16),
    CONSTRAINT attempt_from_one CHECK attempt >= 1
)
ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS message_deliveries_in_mv TO message_deliveries AS
SELECT
    project,
    id,
    stream_id,
    notification_id,
    external_id,
    channel,
    subscription_type,
    token_tail,
    attempt,
    status,
    error_code,
    hint,
    provider_message_id,
    latency_ms,
    retrying,
    at
FROM message_deliveries_in;
