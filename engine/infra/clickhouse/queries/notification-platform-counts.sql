-- The attempts of notifications per subscription type, status and retrying, for their
-- platform_delivery_stats (docs/api.md#reading-listing-and-cancelling): the caller counts the final
-- attempts (a retried one is not counted, its retry is) by status, as the Redis counters count
-- them overall. Written in the shape of the projection counts_by_notification (migration 0011), so
-- ClickHouse reads its pre-counted rows rather than the records; a part the projection has not
-- reached yet is read from the table, with the same answer.
-- Parameters: {project:String}, {ids:Array(String)} (the notification ids).
SELECT notification_id AS id, subscription_type AS type, status, retrying, count() AS n
FROM message_deliveries
WHERE project = {project:String}
    AND notification_id IN {ids:Array(String)}
    AND subscription_type IS NOT NULL
GROUP BY id, type, status, retrying
