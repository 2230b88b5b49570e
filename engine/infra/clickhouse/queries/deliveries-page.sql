-- One page of GET /api/deliveries (docs/api.md#listing-and-counting-deliveries): one project's delivery records, newest first by
-- (at, id), the table's sort key read in reverse.
-- Parameters: {project:String}; {limit:UInt32}, the page size plus one (a further row means
-- there is a next page); and, each on the lines of the switch of the same name:
--   {status:String} {channel:String} {subscription_type:String} {external_id:String}
--   {notification_id:String} {error_code:String}: equality filters;
--   {since:Int64} (inclusive) and {until:Int64} (exclusive): ms since the epoch;
--   switch `after`, {after_at:Int64} and {after_id:String}: the last row of the previous page.
-- `at` is read as `at_ms`: an alias named `at` would replace the column in WHERE.
-- The cursor is written `at <= a AND (at < a OR id < i)`, not `(at, id) < (a, i)`: only the first
-- form lets the primary key skip the newer granules (EXPLAIN indexes = 1).
-- With external_id ClickHouse reads the projection by_user (migration 0009), where one user's
-- records lie together sorted by (at, id): the page is a read of one or two granules in reverse.
-- Without it, the last line keeps ClickHouse on the table: by_user holds the project's
-- records in one granule fewer, so ClickHouse would pick it, then sort all of them by time
-- (250 ms instead of 20 for the newest page of 18.8M records).
SELECT
    id, notification_id, external_id, channel, subscription_type, token_tail, attempt, status,
    error_code, hint, provider_message_id, latency_ms, retrying, toUnixTimestamp64Milli(at) AS at_ms
FROM message_deliveries
WHERE project = {project:String}
    AND status = {status:String}                                                              -- @if status
    AND channel = {channel:String}                                                            -- @if channel
    AND subscription_type = {subscription_type:String}                                        -- @if subscription_type
    AND external_id = {external_id:String}                                                    -- @if external_id
    AND notification_id = {notification_id:String}                                            -- @if notification_id
    AND error_code = {error_code:String}                                                      -- @if error_code
    AND at >= fromUnixTimestamp64Milli({since:Int64}, 'UTC')                                  -- @if since
    AND at < fromUnixTimestamp64Milli({until:Int64}, 'UTC')                                   -- @if until
    AND at <= fromUnixTimestamp64Milli({after_at:Int64}, 'UTC')                               -- @if after
    AND (at < fromUnixTimestamp64Milli({after_at:Int64}, 'UTC') OR id < {after_id:String})   -- @if after
ORDER BY at DESC, id DESC
LIMIT {limit:UInt32}
SETTINGS optimize_use_projections = 0                                                       -- @unless external_id
