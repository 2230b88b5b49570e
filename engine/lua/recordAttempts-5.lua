--[[
  Records what one dispatch job came to (actors/dispatch/dispatch-handler.ts), once: the job is
  acknowledged, and only if it was still pending are its outcomes appended for the recorder, its
  counters moved, its retry queued and its dead tokens sent to the partition's log to be retired.
  A call resent after a lost reply finds the job acknowledged and writes nothing again.

  KEYS[1] dispatch  dispatch:{pN}
  KEYS[2] counts    ncount:{pN}:<notification>
  KEYS[3] outcomes  outcomes:{pN}
  KEYS[4] retries   retry:{pN}
  KEYS[5] ingest    ingest:{pN}
  ARGV[1] group      consumer group of the dispatch stream
  ARGV[2] entryId    the job's stream ID
  ARGV[3] now        ms; the counters' last_at when the job is done
  ARGV[4] done       1 when no retry follows: the job counts as done
  ARGV[5] retry      JSON of the retry job, or ''
  ARGV[6] retryAt    ms when the retry is due
  ARGV[7] outcomeCount  how many of the items are outcomes; the rest are retire entries
  ARGV[8], ARGV[9], ...  items  outcome JSON (schemas/outcomes.ts), then ingest entry JSON (retire)

  Returns 1 when recorded, 0 when the job was already acknowledged.
]]
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
local outcomeCount = tonumber(ARGV[7])
for i = 8, #ARGV do
  if i < 8 + outcomeCount then
    redis.call('XADD', KEYS[3], '*', 'd', ARGV[i])
    -- A failure that will be retried is not counted: its retry's outcome will be.
    local outcome = cjson.decode(ARGV[i])
    if not outcome.retrying then redis.call('HINCRBY', KEYS[2], outcome.status, 1) end
  else
    redis.call('XADD', KEYS[5], '*', 'd', ARGV[i])
  end
end
if ARGV[4] == '1' then
  redis.call('HINCRBY', KEYS[2], 'done', 1)
  redis.call('HSET', KEYS[2], 'last_at', ARGV[3])
end
if ARGV[5] ~= '' then redis.call('ZADD', KEYS[4], ARGV[6], ARGV[5]) end
redis.call('XDEL', KEYS[1], ARGV[2])
return 1
