--[[
  Settles a batch the recorder has inserted into ClickHouse (actors/recorder/recorder-consumer.ts):
  acknowledges its IDs, then trims the stream below the batch's last ID, but never below an entry
  still pending in any group nor past what a group has not read.

  KEYS[1] stream  changes:{pN} or outcomes:{pN}
  ARGV[1] group   consumer group
  ARGV[2] lastId  the batch's last ID: the highest the trim may reach
  ARGV[3], ARGV[4], ...  ids  the batch's IDs

  Returns {pending, trimmedTo}: how many entries the group still has pending after the acks
  (above 0 when no batch is in flight: a read whose reply was lost left entries that no batch
  holds, and the caller claims them), and the ID the stream was trimmed to.
]]
-- #include streams

ackArgs(KEYS[1], ARGV[1], 3, 1)
local floor, pending = trimSafely(KEYS[1], ARGV[2], ARGV[1])
return { pending, floor }
