-- 0003: receipts (delivered, opened, clicked) reported by SDKs, inserted by the recorder from the
-- changes stream (schemas/changes.ts ReceiptChange). `stream_id` is the change's id; with
-- (project, external_id) it identifies the entry.
--
-- Why ORDER BY (project, svc_message_id, external_id, at): receipts are read two ways, both by
-- message: the latest receipt of one message and user for a delivery row (docs/api.md#the-delivery-record `receipt`:
-- a point lookup on the key prefix, newest `at` last), and a notification's delivered / opened /
-- clicked counts (docs/api.md#reading-listing-and-cancelling `counts`: a range scan of one svc_message_id).
-- non_replicated_deduplication_window: redelivered batches are dropped by their token.
CREATE TABLE IF NOT EXISTS receipts
(
    project LowCardinality(String),
    svc_message_id String,
    external_id String,
    receipt LowCardinality(String),
    stream_id String,
    at DateTime64(3, 'UTC')
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(at)
ORDER BY (project, svc_message_id, external_id, at)
SETTINGS non_replicated_deduplication_window = 10000;
