#!lua flags=allow-oom
--[[
  Forgets a detach owed on a token once its detach entry is in the user's ingest stream
  (engine/state/users/token-index.ts). Only the exact value that was sent is cleared: a newer claim may
  have raised it meanwhile, and that detach is still owed.
  KEYS[1] owed          tokd:{pT}:<id> (see claimToken-2.lua)
  ARGV[1] externalId    external_id the detach was sent to
  ARGV[2] registeredAt  its registered_at, ms, as claimToken returned it
  Returns 1 when cleared, 0 when the owed value changed or was already gone.
]]
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 1
end
return 0
