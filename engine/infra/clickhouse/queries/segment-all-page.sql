-- One page of the segment All of one project (docs/api.md#segments): users whose newest version (FINAL)
-- has at least one live subscription type, in external_id order (the users sort key), so the
-- next page resumes after the last id (engine/infra/clickhouse/filters/stream.ts); with switch
-- `through`, only up to the end of one range of the sort key (users-range-end.sql).
-- Parameters: {project:String}; {after:String}, the last id of the previous page ('' for the
-- first); {limit:UInt32}, the page size; {through:String}, the range's last id.
SELECT external_id
FROM users FINAL
WHERE project = {project:String} AND notEmpty(subscription_types) AND external_id > {after:String}
    AND external_id <= {through:String}                                                   -- @if through
ORDER BY external_id
LIMIT {limit:UInt32}
