-- Where the next range of an audience read over the users mirror ends
-- (engine/infra/clickhouse/filters/stream.ts): the {span:UInt32}-th external_id of the project after
-- {after:String}, or the last one when fewer follow; '' when none does. Every row counts, whatever
-- its version and state, without FINAL: the read follows the sort key and stops after `span` rows of
-- each part, where a FINAL read filtered on other columns reads every row after {after:String}.
-- Parameters: {project:String}, {after:String}, {span:UInt32}.
SELECT max(external_id) AS through
FROM (
    SELECT external_id
    FROM users
    WHERE project = {project:String} AND external_id > {after:String}
    ORDER BY external_id
    LIMIT {span:UInt32}
)
