#!lua flags=no-writes
--[[
  Loads the users of dispatch jobs read together (actors/dispatch/recipient-batch.ts), each as
  loadRecipient-2.lua does. All keys are in one slot: on a Redis Cluster the users of one
  partition.

  KEYS[1], KEYS[2], ...  users {user, canceled}

  Returns one reply of loadRecipient-2.lua per user, in the order of the users.
]]
-- #include user
-- #include recipient

local out = {}
for i = 1, #KEYS, 2 do
  out[#out + 1] = recipient(KEYS[i], KEYS[i + 1])
end
return out
