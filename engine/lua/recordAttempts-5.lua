#!lua flags=allow-oom
--[[
  Records what one dispatch job came to (actors/dispatch/dispatch-handler.ts), once: the job is
  acknowledged, and only if it was still pending are its outcomes appended for the recorder, its
  notification's counters moved (as engine/notifications/lifecycle.ts settles them), its retry
  queued and its dead tokens sent to the partition's log to be retired. A call resent after a lost
  reply finds the job acknowledged and writes nothing again.

  KEYS[1] dispatch  dispatch:{pN}
  KEYS[2] counts    ncount:{pN}:<notification>
  KEYS[3] outcomes  outcomes:{pN}
  KEYS[4] retries   retry:{pN}
  KEYS[5] ingest    ingest:{pN}
  ARGV[1] group        consumer group of the dispatch stream
  ARGV[2] entryId      the job's stream ID
  ARGV[3] counters     JSON object: counter field -> increment
  ARGV[4] lastAtField  the counter set to `now`, or '' to leave it
  ARGV[5] now          ms
  ARGV[6] retry        JSON of the retry job, or ''
  ARGV[7] retryAt      ms when the retry is due
  ARGV[8] outcomeCount  how many of the items are outcomes; the rest are retire entries
  ARGV[9], ARGV[10], ...  items  outcome JSON (schemas/outcomes.ts), then ingest entry JSON (retire)

  Returns 1 when recorded, 0 when the job was already acknowledged.
]]
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
local outcomeCount = tonumber(ARGV[8])
for i = 9, #ARGV do
  if i < 9 + outcomeCount then
    redis.call('XADD', KEYS[3], '*', 'd', ARGV[i])
  else
    redis.call('XADD', KEYS[5], '*', 'd', ARGV[i])
  end
end
for field, increment in pairs(cjson.decode(ARGV[3])) do redis.call('HINCRBY', KEYS[2], field, increment) end
if ARGV[4] ~= '' then redis.call('HSET', KEYS[2], ARGV[4], ARGV[5]) end
if ARGV[6] ~= '' then redis.call('ZADD', KEYS[4], ARGV[7], ARGV[6]) end
redis.call('XDEL', KEYS[1], ARGV[2])
return 1
