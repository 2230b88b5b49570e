#!lua flags=allow-oom
--[[
  Records what dispatch jobs of one partition and one notification came to
  (engine/state/notifications/attempts.ts), each once: a job is acknowledged, and only if it was still
  pending are its outcomes appended for the recorder, its share of the notification's counters
  moved (as engine/state/notifications/lifecycle.ts settles them), its retries queued and its dead tokens
  sent to the partition's log to be retired. A call resent after a lost reply finds its jobs
  acknowledged and writes nothing again. The counters of the jobs recorded are summed first, so
  a batch moves each counter field once, and their outcomes go to the recorder in entries of up
  to `perEntry` outcomes each, newline-separated (one append for many attempts).

  KEYS[1] dispatch  dispatch:{pN}
  KEYS[2] counts    ncount:{pN}:<notification>
  KEYS[3] outcomes  outcomes:{pN}
  KEYS[4] retries   retry:{pN}
  KEYS[5] ingest    ingest:{pN}
  ARGV[1] group     consumer group of the dispatch stream
  ARGV[2] now       ms, the value of a done job's lastAt field
  ARGV[3] perEntry  most outcomes in one entry of the outcomes stream
  ARGV[4], ARGV[5], ...  jobs {entryId, counters, lastAtField, retries, outcomes, retire}
    entryId      the job's stream ID
    counters     JSON object: counter field -> increment
    lastAtField  the counter set to `now`, or '' to leave it
    retries      the retry jobs, one a line: `<due ms> <job JSON>` (a job of several users may
                 retry several); '' for none
    outcomes     outcome JSON lines (schemas/outcomes.ts), newline-separated ('' for none)
    retire       ingest entry JSON lines (retire), newline-separated ('' for none)

  Returns the number of jobs recorded; a job already acknowledged is not counted.
]]
local recorded = 0
local sums = {}
local lastAt = nil
local lines = {}
for i = 4, #ARGV, 6 do
  local entryId = ARGV[i]
  if redis.call('XACK', KEYS[1], ARGV[1], entryId) == 1 then
    recorded = recorded + 1
    for line in string.gmatch(ARGV[i + 4], '[^\n]+') do lines[#lines + 1] = line end
    for line in string.gmatch(ARGV[i + 5], '[^\n]+') do redis.call('XADD', KEYS[5], '*', 'd', line) end
    for field, increment in pairs(cjson.decode(ARGV[i + 1])) do sums[field] = (sums[field] or 0) + increment end
    if ARGV[i + 2] ~= '' then lastAt = ARGV[i + 2] end
    for due, retry in string.gmatch(ARGV[i + 3], '(%d+) ([^\n]+)') do redis.call('ZADD', KEYS[4], due, retry) end
    redis.call('XDEL', KEYS[1], entryId)
  end
end
local perEntry = tonumber(ARGV[3])
for first = 1, #lines, perEntry do
  redis.call('XADD', KEYS[3], '*', 'd', table.concat(lines, '\n', first, math.min(first + perEntry - 1, #lines)))
end
for field, increment in pairs(sums) do redis.call('HINCRBY', KEYS[2], field, increment) end
if lastAt ~= nil then redis.call('HSET', KEYS[2], lastAt, ARGV[2]) end
return recorded
