-- One page of GET /api/webhooks/{id}/attempts (docs/api.md#webhook-attempts): one endpoint's
-- attempts, newest first by (at, event_id, attempt), the table's sort key read in reverse.
-- Parameters: {project:String} {webhook_id:String}; {limit:UInt32}, the page size plus one (a
-- further row means there is a next page); and, each on the lines of the switch of the same name:
--   {status:String} {event_type:String}: equality filters;
--   {since:Int64} (inclusive) and {until:Int64} (exclusive): ms since the epoch;
--   switch `after`, {after_at:Int64} {after_event_id:String} {after_attempt:UInt16}: the last row
--   of the previous page.
-- `at` is read as `at_ms`: an alias named `at` would replace the column in WHERE. The cursor's
-- `at <= a` term is what lets the primary key skip newer granules; the tuple then orders rows
-- within one ms.
SELECT event_id, event_type, notification_id, attempt, status, response_code, latency_ms, error, toUnixTimestamp64Milli(at) AS at_ms
FROM webhook_attempts
WHERE project = {project:String}
    AND webhook_id = {webhook_id:String}
    AND status = {status:String}                                             -- @if status
    AND event_type = {event_type:String}                                     -- @if event_type
    AND at >= fromUnixTimestamp64Milli({since:Int64}, 'UTC')                 -- @if since
    AND at < fromUnixTimestamp64Milli({until:Int64}, 'UTC')                  -- @if until
    AND at <= fromUnixTimestamp64Milli({after_at:Int64}, 'UTC')              -- @if after
    AND (at < fromUnixTimestamp64Milli({after_at:Int64}, 'UTC')              -- @if after
        OR (event_id, attempt) < ({after_event_id:String}, {after_attempt:UInt16}))  -- @if after
ORDER BY at DESC, event_id DESC, attempt DESC
LIMIT {limit:UInt32}
