-- The audience of a re-drive (docs/api.md#re-drive): the users whose last delivery record for one
-- notification matches the filters, last by (at, id). The records of one notification are found
-- through the notification_id bloom filter; `page` adds what streamAudience needs (users after
-- {after:String} in external_id order, at most {limit:UInt32}); without it the query is the
-- inside of a count.
-- Parameters: {project:String}, {of:String}; switches status, error_code, channel, since, until
-- with {status:String}, {error_code:String}, {channel:String}, {since:Int64}, {until:Int64} (ms).
SELECT external_id
FROM message_deliveries
WHERE project = {project:String} AND notification_id = {of:String}
    AND channel = {channel:String}                                                            -- @if channel
    AND external_id > {after:String}                                                          -- @if page
GROUP BY external_id
HAVING 1
    AND argMax(status, (at, id)) = {status:String}                                            -- @if status
    AND argMax(error_code, (at, id)) = {error_code:String}                                    -- @if error_code
    AND max(at) >= fromUnixTimestamp64Milli({since:Int64}, 'UTC')                             -- @if since
    AND max(at) < fromUnixTimestamp64Milli({until:Int64}, 'UTC')                              -- @if until
ORDER BY external_id                                                                          -- @if page
LIMIT {limit:UInt32}                                                                          -- @if page
