#!lua flags=allow-oom
--[[
  Marks a partition's batch of one stream kind as held by a recorder round, only where no mark is
  (actors/recorder/rounds.ts). A script so that it runs at maxmemory: the round's insert and
  settle are what trim the changes and outcomes streams.

  KEYS[1] marks  recorder:marks:{pN}: per stream kind, the round holding the batch in flight
  ARGV[1] kind   the stream's field
  ARGV[2] token  the round's token

  Returns 1 when marked, 0 when another round's mark is there.
]]
return redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
