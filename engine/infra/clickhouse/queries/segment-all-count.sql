-- How many users of one project are in the segment All (docs/api.md#segments): users whose newest version
-- (FINAL) has at least one live subscription type.
-- Parameters: {project:String}.
SELECT count() AS count
FROM users FINAL
WHERE project = {project:String} AND notEmpty(subscription_types)
