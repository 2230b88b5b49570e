-- GET /api/deliveries/stats (docs/api.md#listing-and-counting-deliveries): how many delivery records of one project fall in each
-- group, counted from the table's rows. deliveries-stats-hours.sql gives the same answer from the
-- projection counts_by_hour and is used instead when it can be; this file serves the rest: filters
-- or a grouping the projection lacks (external_id, notification_id) and ranges without a whole
-- hour. Exactly one `by_*` switch picks the grouping column; `hour` is the hour start in ms since
-- the epoch (the caller formats it), the projection's expression, exact for every DateTime64
-- (toStartOfHour returns a DateTime, which wraps before 1970 and after 2106). Rows without a value
-- form the group NULL. Groups are sorted by count, largest first (ties by key: switch `by_count`),
-- and hours by time (switch `by_time`).
-- Parameters: {project:String} and the filters of deliveries-page.sql, on the lines of the switch
-- of the same name: {status:String} {channel:String} {subscription_type:String}
-- {external_id:String} {notification_id:String} {error_code:String} {since:Int64} {until:Int64}.
SELECT
    status AS key,                                                   -- @if by_status
    channel AS key,                                                  -- @if by_channel
    error_code AS key,                                               -- @if by_error_code
    subscription_type AS key,                                        -- @if by_subscription_type
    notification_id AS key,                                          -- @if by_notification_id
    toUnixTimestamp64Milli(at) - positiveModulo(toUnixTimestamp64Milli(at), 3600000) AS key,  -- @if by_hour
    count() AS count
FROM message_deliveries
WHERE project = {project:String}
    AND status = {status:String}                                     -- @if status
    AND channel = {channel:String}                                   -- @if channel
    AND subscription_type = {subscription_type:String}               -- @if subscription_type
    AND external_id = {external_id:String}                           -- @if external_id
    AND notification_id = {notification_id:String}                   -- @if notification_id
    AND error_code = {error_code:String}                             -- @if error_code
    AND at >= fromUnixTimestamp64Milli({since:Int64}, 'UTC')         -- @if since
    AND at < fromUnixTimestamp64Milli({until:Int64}, 'UTC')          -- @if until
GROUP BY key
ORDER BY count DESC, key ASC                                         -- @if by_count
ORDER BY key ASC                                                     -- @if by_time
