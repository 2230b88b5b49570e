#!lua flags=no-writes
--[[
  Loads the users of dispatch jobs read together in one partition, for one notification
  (actors/dispatch/recipient-batch.ts), each as loadRecipient-2.lua does for a job that sends to
  every subscription of the channel (not a retry, not by subscription id). All keys are in the
  partition's slot.

  KEYS[1], KEYS[2], ...  users {user, canceled}
  ARGV[1] types    the channel's subscription types, space-separated
  ARGV[2] allTags  '1' for a notification with personal texts: every tag is returned too

  Returns one reply of loadRecipient-2.lua per user, in the order of the users.
]]
-- #include user
-- #include recipient

local types = channelTypes(ARGV[1])
local out = {}
for i = 1, #KEYS, 2 do
  out[#out + 1] = recipient(KEYS[i], KEYS[i + 1], types, nil, ARGV[2] == '1')
end
return out
