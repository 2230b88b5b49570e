-- One page of GET /api/events (docs/api.md#users-and-events): one project's events, newest first by
-- (at, external_id, stream_id), the table's sort key read in reverse.
-- Parameters: {project:String}; {limit:UInt32}, the page size plus one (a further row means there
-- is a next page); and, each on the lines of the switch of the same name: {external_id:String},
-- {name:String}, {since:Int64} (inclusive) and {until:Int64} (exclusive) in ms since the epoch;
-- switch `after`, {after_at:Int64} {after_external_id:String} {after_stream_id:String}: the last
-- row of the previous page.
-- `at` is read as `at_ms`: an alias named `at` would replace the column in WHERE. The cursor's
-- `at <= a` term is what lets the primary key skip newer granules; the tuple then orders rows
-- within one ms.
SELECT external_id, name, properties, idempotency_key, stream_id, toUnixTimestamp64Milli(at) AS at_ms
FROM events
WHERE project = {project:String}
    AND external_id = {external_id:String}                                   -- @if external_id
    AND name = {name:String}                                                 -- @if name
    AND at >= fromUnixTimestamp64Milli({since:Int64}, 'UTC')                 -- @if since
    AND at < fromUnixTimestamp64Milli({until:Int64}, 'UTC')                  -- @if until
    AND at <= fromUnixTimestamp64Milli({after_at:Int64}, 'UTC')              -- @if after
    AND (at < fromUnixTimestamp64Milli({after_at:Int64}, 'UTC')              -- @if after
        OR (external_id, stream_id) < ({after_external_id:String}, {after_stream_id:String}))  -- @if after
ORDER BY at DESC, external_id DESC, stream_id DESC
LIMIT {limit:UInt32}
