-- The users of notifications sent to on each subscription type who have a receipt of the
-- notification, and those who clicked, for their platform_delivery_stats
-- (docs/api.md#reading-listing-and-cancelling). A receipt names the user, not the device, so a
-- user sent to on two types counts under both. This reads every record of the notifications: the
-- caller runs it only for those with a receipt at all (notification-receipts.sql).
-- Rows of a notification come after its creation: {since:Int64} (the earliest creation, ms)
-- prunes by the sort key's `at`.
-- Parameters: {project:String}, {ids:Array(String)} (the notification ids), {since:Int64}.
SELECT
    notification_id AS id,
    subscription_type AS type,
    uniqExact(external_id) AS received,
    uniqExactIf(external_id, (notification_id, external_id) IN (
        SELECT svc_message_id, external_id FROM receipts
        WHERE project = {project:String} AND svc_message_id IN {ids:Array(String)} AND receipt = 'clicked')) AS converted
FROM message_deliveries
WHERE project = {project:String}
    AND notification_id IN {ids:Array(String)}
    AND at >= fromUnixTimestamp64Milli({since:Int64}, 'UTC')
    AND subscription_type IS NOT NULL
    AND status = 'sent'
    AND (notification_id, external_id) IN (
        SELECT svc_message_id, external_id FROM receipts WHERE project = {project:String} AND svc_message_id IN {ids:Array(String)})
GROUP BY id, type
