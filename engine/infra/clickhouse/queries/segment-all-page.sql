-- One page of the segment All of one project (docs/api.md#segments): users whose newest version (FINAL)
-- has at least one live subscription type, in external_id order (the users sort key), so the
-- next page resumes after the last id (engine/infra/clickhouse/filters/stream.ts).
-- Parameters: {project:String}; {after:String}, the last id of the previous page ('' for the
-- first); {limit:UInt32}, the page size.
SELECT external_id
FROM users FINAL
WHERE project = {project:String} AND notEmpty(subscription_types) AND external_id > {after:String}
ORDER BY external_id
LIMIT {limit:UInt32}
