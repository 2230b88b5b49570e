#!lua
--[[
  Appends the dispatch jobs of one fan-out chunk for the users of partition N
  (engine/state/notifications/lifecycle.ts): jobs of up to `perJob` users each (UsersJob,
  schemas/notifications.ts). A user already appended for this notification is skipped, so a
  fan-out resumed after a crash appends nobody twice; the partition's jobs counter moves by the
  users appended, in the same call.

  KEYS[1] dispatch  dispatch:{pN}
  KEYS[2] fanned    nfan:{pN}:<notification>, the users appended so far
  KEYS[3] counts    ncount:{pN}:<notification>
  ARGV[1] notification  notification id
  ARGV[2] project       project id
  ARGV[3] keepSeconds   how long the set and counters live (the notification's ttl and a margin)
  ARGV[4] jobsField     the counter of users appended
  ARGV[5] perJob        most users in one job
  ARGV[6], ARGV[7], ...  users  external_ids

  Returns the number of users appended.
]]
local fresh = {}
for i = 6, #ARGV do
  if redis.call('SADD', KEYS[2], ARGV[i]) == 1 then fresh[#fresh + 1] = cjson.encode(ARGV[i]) end
end
-- The job's JSON around its users, built once: only the users differ from job to job.
local head = '{"n":' .. cjson.encode(ARGV[1]) .. ',"project":' .. cjson.encode(ARGV[2]) .. ',"attempt":1,"users":['
local perJob = tonumber(ARGV[5])
for first = 1, #fresh, perJob do
  redis.call('XADD', KEYS[1], '*', 'd', head .. table.concat(fresh, ',', first, math.min(first + perJob - 1, #fresh)) .. ']}')
end
if #fresh > 0 then redis.call('HINCRBY', KEYS[3], ARGV[4], #fresh) end
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('EXPIRE', KEYS[3], ARGV[3])
return #fresh
