#!lua flags=allow-oom
--[[
  Appends a detach owed to a user who lost a subscription token to their ingest stream
  (actors/partition/outbox-settler.ts). A script so that it runs at maxmemory: the outbox is
  settled after an apply, and a detach owed is already part of accepted work.

  KEYS[1] ingest  ingest:{pN} of the user who lost the token
  ARGV[1] entry   the detach IngestEntry, JSON

  Returns the entry's stream ID.
]]
return redis.call('XADD', KEYS[1], '*', 'd', ARGV[1])
