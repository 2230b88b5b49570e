#!lua flags=allow-oom
--[[
  Settles entries the webhooks role has turned into queued events (actors/webhooks/tap.ts):
  acknowledges them in its group, then trims the stream below the last of them, but never below
  an entry still pending in any group nor past what a group has not read.

  KEYS[1] stream  changes:{pN} or outcomes:{pN}
  ARGV[1] group   consumer group
  ARGV[2] lastId  the last settled ID: the highest the trim may reach
  ARGV[3], ARGV[4], ...  ids  the entries' IDs

  Returns {pending, trimmedTo}: how many entries the group still has pending after the acks, and
  the ID the stream was trimmed to.
]]
-- #include streams

ackArgs(KEYS[1], ARGV[1], 3, 1)
local floor, pending = trimSafely(KEYS[1], ARGV[2], ARGV[1])
return { pending, floor }
