#!lua flags=allow-oom
--[[
  Settles a batch the recorder has inserted into ClickHouse (actors/recorder/rounds.ts):
  acknowledges its IDs, clears the partition's mark of the round that carried it, then trims the
  stream below the batch's last ID, but never below an entry still pending in any group nor past
  what a group has not read.

  KEYS[1] stream  changes:{pN} or outcomes:{pN}
  KEYS[2] marks   recorder:marks:{pN}: per stream kind, the round holding the batch in flight
  ARGV[1] group   consumer group
  ARGV[2] lastId  the batch's last ID: the highest the trim may reach
  ARGV[3] kind    the stream's field in marks
  ARGV[4] token   the round's token: the mark is cleared only while it names this round
  ARGV[5], ARGV[6], ...  ids  the batch's IDs

  Returns {pending, trimmedTo}: how many entries the group still has pending after the acks
  (above 0 when no batch is in flight: a read whose reply was lost left entries that no batch
  holds, and the caller claims them), and the ID the stream was trimmed to.
]]
-- #include streams

ackArgs(KEYS[1], ARGV[1], 5, 1)
if redis.call('HGET', KEYS[2], ARGV[3]) == ARGV[4] then redis.call('HDEL', KEYS[2], ARGV[3]) end
local floor, pending = trimSafely(KEYS[1], ARGV[2], ARGV[1])
return { pending, floor }
