-- platform_delivery_stats of one notification (docs/api.md#reading-listing-and-cancelling): per
-- subscription type, the final attempts (a retried one is not counted, its retry is) by status, as
-- the Redis counters count them overall, and the users sent to on that type with a receipt. A
-- receipt names the user, not the device, so a user sent to on two types counts under both.
-- Rows of the notification come after its creation: {since:Int64} prunes by the sort key's `at`.
-- Parameters: {project:String}, {notification_id:String}, {since:Int64} (created_at, ms).
SELECT
    subscription_type AS type,
    countIf(status = 'sent' AND NOT retrying) AS successful,
    countIf(status = 'skipped') AS skipped,
    countIf(status = 'failed' AND NOT retrying) AS failed,
    uniqExactIf(external_id, status = 'sent' AND external_id IN (
        SELECT external_id FROM receipts WHERE project = {project:String} AND svc_message_id = {notification_id:String})) AS received,
    uniqExactIf(external_id, status = 'sent' AND external_id IN (
        SELECT external_id FROM receipts WHERE project = {project:String} AND svc_message_id = {notification_id:String} AND receipt = 'clicked')) AS converted
FROM message_deliveries
WHERE project = {project:String}
    AND notification_id = {notification_id:String}
    AND at >= fromUnixTimestamp64Milli({since:Int64}, 'UTC')
    AND subscription_type IS NOT NULL
GROUP BY type
