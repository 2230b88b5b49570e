#!lua flags=no-writes
--[[
  Loads what dispatch jobs read together need of their users (actors/dispatch/recipient-batch.ts),
  in one call: each user's record, whose subscriptions, tags and consent the engine picks (a
  retry's subscriptions, those a notification by subscription id targets, the channel's), and the
  notification's cancel mark in the user's partition, which a send whose provider slot is free
  when the reply comes back is checked against with the record's consent; one that waited for its
  slot reads them again so. All keys are in one slot: on a Redis Cluster the users of one
  partition.

  KEYS[1], KEYS[2], ...  users {user, canceled}: usr:{pN}:<project>:<external_id>
                         (engine/infra/scripts/lua/include/user.lua), ncancel:{pN}:<notification>

  Returns, per user in the order of the users, {record, canceled}: the user's record as stored
  (MessagePack; a user of 0.11.1's hashes packed the same way; nil when there is no user), and 1
  when the notification is canceled (else 0).
]]
-- #include user
-- #include recipient

local out = {}
for i = 1, #KEYS, 2 do
  out[#out + 1] = recipient(KEYS[i], KEYS[i + 1])
end
return out
