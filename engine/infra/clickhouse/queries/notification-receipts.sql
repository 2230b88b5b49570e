-- The delivered / opened / clicked counts of one notification (docs/api.md#reading-listing-and-cancelling `counts`): distinct users
-- with a receipt of it, a range scan of the receipts sort key (migration 0003). A later stage
-- implies the earlier ones (an opened notification was delivered, though not every device
-- reports delivery), so each count includes the users past it, and a redelivered receipt counts
-- its user once.
-- Parameters: {project:String}, {svc_message_id:String} (the notification id).
SELECT
    uniqExact(external_id) AS delivered,
    uniqExactIf(external_id, receipt IN ('opened', 'clicked')) AS opened,
    uniqExactIf(external_id, receipt = 'clicked') AS clicked
FROM receipts
WHERE project = {project:String} AND svc_message_id = {svc_message_id:String}
