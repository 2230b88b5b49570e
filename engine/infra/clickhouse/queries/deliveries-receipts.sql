-- The latest receipt (docs/api.md#the-delivery-record `receipt`) of each (notification, user) pair of one deliveries
-- page. Receipts carry the notification id as svc_message_id.
-- Parameters: {project:String}; {notification_ids:Array(String)} and {external_ids:Array(String)},
-- the page's distinct values (the caller keeps only the pairs the page has).
-- Latest by `at`; two receipts at the same ms go to the furthest one (clicked, then opened,
-- then delivered), so the answer does not depend on insert order.
SELECT
    svc_message_id,
    external_id,
    argMax(receipt, (at, indexOf(['delivered', 'opened', 'clicked'], receipt))) AS receipt
FROM receipts
WHERE project = {project:String}
    AND svc_message_id IN {notification_ids:Array(String)}
    AND external_id IN {external_ids:Array(String)}
GROUP BY svc_message_id, external_id
