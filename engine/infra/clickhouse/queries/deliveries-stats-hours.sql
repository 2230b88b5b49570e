-- GET /api/deliveries/stats (docs/api.md#listing-and-counting-deliveries) when the range holds at least one whole hour and no filter
-- or grouping needs a column the projection counts_by_hour (migration 0006) lacks (external_id,
-- notification_id): the same answer as deliveries-stats.sql, read mostly from the projection.
-- The first branch counts the whole hours [hours_from, hours_to) through the projection, using
-- only its columns and its own hour expression so ClickHouse picks it; the second counts the
-- partial edge hours from the table (docs/architecture.md, "Queries").
-- Exactly one `by_*` switch picks the grouping column; `hour` is the hour start in ms since the
-- epoch (the caller formats it). Rows without a value form the group NULL. Sorted by count,
-- largest first (ties by key: switch `by_count`), or by time (switch `by_time`).
-- Parameters: {project:String}; on the lines of the switch of the same name, {status:String}
-- {channel:String} {subscription_type:String} {error_code:String}; switch `hours_from` with
-- {hours_from:Int64} and switch `hours_to` with {hours_to:Int64}, whole hours in ms since the
-- epoch (absent: no bound on that side); {head_from:Int64} {head_to:Int64} {tail_from:Int64}
-- {tail_to:Int64}, the edges in ms since the epoch, each from inclusive and to exclusive.
SELECT key, sum(n) AS count
FROM
(
    SELECT
        status AS key,                                                                         -- @if by_status
        channel AS key,                                                                        -- @if by_channel
        error_code AS key,                                                                     -- @if by_error_code
        subscription_type AS key,                                                              -- @if by_subscription_type
        toUnixTimestamp64Milli(at) - positiveModulo(toUnixTimestamp64Milli(at), 3600000) AS key,  -- @if by_hour
        count() AS n
    FROM message_deliveries
    WHERE project = {project:String}
        AND status = {status:String}                                                           -- @if status
        AND channel = {channel:String}                                                         -- @if channel
        AND subscription_type = {subscription_type:String}                                     -- @if subscription_type
        AND error_code = {error_code:String}                                                   -- @if error_code
        AND toUnixTimestamp64Milli(at) - positiveModulo(toUnixTimestamp64Milli(at), 3600000) >= {hours_from:Int64}  -- @if hours_from
        AND toUnixTimestamp64Milli(at) - positiveModulo(toUnixTimestamp64Milli(at), 3600000) < {hours_to:Int64}     -- @if hours_to
    GROUP BY key
    UNION ALL
    SELECT
        status AS key,                                                                         -- @if by_status
        channel AS key,                                                                        -- @if by_channel
        error_code AS key,                                                                     -- @if by_error_code
        subscription_type AS key,                                                              -- @if by_subscription_type
        toUnixTimestamp64Milli(at) - positiveModulo(toUnixTimestamp64Milli(at), 3600000) AS key,  -- @if by_hour
        count() AS n
    FROM message_deliveries
    WHERE project = {project:String}
        AND status = {status:String}                                                           -- @if status
        AND channel = {channel:String}                                                         -- @if channel
        AND subscription_type = {subscription_type:String}                                     -- @if subscription_type
        AND error_code = {error_code:String}                                                   -- @if error_code
        AND (at >= fromUnixTimestamp64Milli({head_from:Int64}, 'UTC') AND at < fromUnixTimestamp64Milli({head_to:Int64}, 'UTC')
            OR at >= fromUnixTimestamp64Milli({tail_from:Int64}, 'UTC') AND at < fromUnixTimestamp64Milli({tail_to:Int64}, 'UTC'))
    GROUP BY key
)
GROUP BY key
ORDER BY count DESC, key ASC                                                                   -- @if by_count
ORDER BY key ASC                                                                               -- @if by_time
