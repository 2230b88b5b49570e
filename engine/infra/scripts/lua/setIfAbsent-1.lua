#!lua flags=allow-oom
--[[
  SET key value PX ttlMs NX, as a script so that it runs at maxmemory: taking a partition's lease
  (engine/infra/runner/partition-runner.ts) and writing a recorder round's manifest or its `aborted`
  mark (actors/recorder/rounds.ts) come before the work that frees memory.

  KEYS[1] key    the lease, or the round's manifest
  ARGV[1] value  the worker id, or the manifest
  ARGV[2] ttlMs  its lifetime, ms

  Returns 1 when it was set, 0 when the key already existed.
]]
if redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 end
return 0
