-- The delivered / opened / clicked counts of notifications (docs/api.md#reading-listing-and-cancelling `counts`): distinct users
-- with a receipt of each, a range scan of the receipts sort key (migration 0003) per notification.
-- A later stage implies the earlier ones (an opened notification was delivered, though not every
-- device reports delivery), so each count includes the users past it, and a redelivered receipt
-- counts its user once. A notification without a receipt has no row.
-- Parameters: {project:String}, {ids:Array(String)} (the notification ids).
SELECT
    svc_message_id AS id,
    uniqExact(external_id) AS delivered,
    uniqExactIf(external_id, receipt IN ('opened', 'clicked')) AS opened,
    uniqExactIf(external_id, receipt = 'clicked') AS clicked
FROM receipts
WHERE project = {project:String} AND svc_message_id IN {ids:Array(String)}
GROUP BY id
