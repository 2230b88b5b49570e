-- The users of one notification sent to on each subscription type who have a receipt of it, and
-- those who clicked, for its platform_delivery_stats (docs/api.md#reading-listing-and-cancelling).
-- A receipt names the user, not the device, so a user sent to on two types counts under both.
-- This reads every record of the notification: the caller runs it only when the notification has
-- a receipt at all (notification-receipts.sql).
-- Rows of the notification come after its creation: {since:Int64} prunes by the sort key's `at`.
-- Parameters: {project:String}, {notification_id:String}, {since:Int64} (created_at, ms).
SELECT
    subscription_type AS type,
    uniqExact(external_id) AS received,
    uniqExactIf(external_id, external_id IN (
        SELECT external_id FROM receipts WHERE project = {project:String} AND svc_message_id = {notification_id:String} AND receipt = 'clicked')) AS converted
FROM message_deliveries
WHERE project = {project:String}
    AND notification_id = {notification_id:String}
    AND at >= fromUnixTimestamp64Milli({since:Int64}, 'UTC')
    AND subscription_type IS NOT NULL
    AND status = 'sent'
    AND external_id IN (SELECT external_id FROM receipts WHERE project = {project:String} AND svc_message_id = {notification_id:String})
GROUP BY type
