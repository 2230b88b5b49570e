#!lua flags=no-writes
--[[
  Loads what a dispatch job needs of its user (actors/dispatch/dispatch-handler.ts) in one call:
  their record, whose subscriptions, tags and consent the engine picks (a retry's subscriptions,
  those a notification by subscription id targets, the channel's), and the notification's cancel
  mark in the user's partition, which a send whose provider slot is free when the reply comes back
  is checked against with the record's consent; one that waited for its slot reads them again
  so (loadRecipients-n.lua).

  KEYS[1] user      usr:{pN}:<project>:<external_id> (engine/infra/scripts/lua/include/user.lua)
  KEYS[2] canceled  ncancel:{pN}:<notification>

  Returns {record, canceled}: the user's record as stored (MessagePack; a user of 0.11.1's hashes
  packed the same way; nil when there is no user), and 1 when the notification is canceled (else 0).
]]
-- #include user
-- #include recipient

return recipient(KEYS[1], KEYS[2])
