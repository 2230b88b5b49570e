#!lua flags=allow-oom
--[[
  Records which subscription an id names (engine/state/subscription-ids.ts), when its token's claim
  is settled (actors/partition/outbox-settler.ts). The value follows from the key, so writing it
  again after a replay changes nothing. A script so that it runs at maxmemory, as the claim does.

  KEYS[1] index  subid:proj:<id>
  ARGV[1] field  TYPE:token, the subscription's field in its owner's subs hash

  Returns 1.
]]
redis.call('SET', KEYS[1], ARGV[1])
return 1
