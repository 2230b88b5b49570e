-- One page of the segment All of a project (users whose newest version, FINAL, has at least one
-- live subscription type): the external_ids after `after`, in external_id order, at most `limit`.
-- Parameters: project String, after String ('' for the first page), limit UInt32.
SELECT external_id
FROM users FINAL
WHERE project = {project:String} AND notEmpty(subscription_types) AND external_id > {after:String}
ORDER BY external_id
LIMIT {limit:UInt32}
