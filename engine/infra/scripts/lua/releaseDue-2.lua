#!lua
--[[
  Moves the members of a sorted set whose score (a due time, ms) has passed onto a stream, at most
  `max` of them, atomically: a notification whose send_after came (scheduled -> notifications
  log) or a dispatch retry whose backoff ended (retry:{pN} -> dispatch:{pN}). Several callers may
  race; each member moves once.

  KEYS[1] waiting  the sorted set
  KEYS[2] stream   where due members go, as field d
  ARGV[1] now  ms
  ARGV[2] max  most members moved in this call

  Returns {moved, next}: the number of members moved, and the due time of the earliest member left
  (ms, as text; '' when none), so a caller knows when to call again.
]]
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, member in ipairs(due) do
  redis.call('XADD', KEYS[2], '*', 'd', member)
  redis.call('ZREM', KEYS[1], member)
end
local left = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return { #due, left[2] or '' }
