#!lua flags=allow-oom
--[[
  Writes one user's consent for a subscription type and appends a `user` change for the recorder,
  atomically (engine/state/consent.ts). It runs at maxmemory: an opt-out is never lost to
  overload (docs/api.md#opt-out-and-opt-in), and it is small.

  KEYS[1] consent  consent:{pN}:proj:ext
  KEYS[2] changes  changes:{pN}
  ARGV[1] type     the subscription type (the hash field)
  ARGV[2] stored   JSON {opted_out, at}
  ARGV[3] change   JSON UserChange

  Returns the change's stream ID.
]]
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return redis.call('XADD', KEYS[2], '*', 'd', ARGV[3])
