#!lua flags=allow-oom
--[[
  Forgets a detach owed on a token once its detach entry is in the user's ingest stream
  (actors/partition/outbox-settler.ts). Only the exact value that was sent is cleared: a newer
  claim may have raised it meanwhile, and that detach is still owed.

  KEYS[1] token         token:{pT}:proj:TYPE:token (fields: see claimToken-1.lua)
  ARGV[1] externalId    external_id the detach was sent to
  ARGV[2] registeredAt  its registered_at, ms, as claimToken returned it

  Returns 1 when cleared, 0 when the owed value changed or was already gone.
]]
local field = 'd:' .. ARGV[1]
if redis.call('HGET', KEYS[1], field) == ARGV[2] then
  redis.call('HDEL', KEYS[1], field)
  return 1
end
return 0
