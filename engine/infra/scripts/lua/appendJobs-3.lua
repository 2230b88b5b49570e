#!lua
--[[
  Appends the dispatch jobs of one fan-out chunk for the users of partition N
  (engine/state/notifications/lifecycle.ts). A user already appended for this notification is skipped,
  so a fan-out resumed after a crash appends nobody twice; the partition's job counter moves by
  what was appended, in the same call.

  KEYS[1] dispatch  dispatch:{pN}
  KEYS[2] fanned    nfan:{pN}:<notification>, the users appended so far
  KEYS[3] counts    ncount:{pN}:<notification>
  ARGV[1] notification  notification id
  ARGV[2] project       project id
  ARGV[3] keepSeconds   how long the set and counters live (the notification's ttl and a margin)
  ARGV[4] jobsField     the counter of jobs appended
  ARGV[5], ARGV[6], ...  users  external_ids

  Returns the number of jobs appended.
]]
local appended = 0
for i = 5, #ARGV do
  if redis.call('SADD', KEYS[2], ARGV[i]) == 1 then
    redis.call('XADD', KEYS[1], '*', 'd', cjson.encode({ n = ARGV[1], project = ARGV[2], external_id = ARGV[i], attempt = 1 }))
    appended = appended + 1
  end
end
if appended > 0 then redis.call('HINCRBY', KEYS[3], ARGV[4], appended) end
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('EXPIRE', KEYS[3], ARGV[3])
return appended
