#!lua flags=allow-oom
--[[
  Takes one token from a key's rate-limit bucket (gateway/server/rate-limit.ts): a token bucket that
  holds at most `burst` tokens and refills at `rate` tokens a second. The clock is Redis's own
  (TIME), so every gateway of a deployment sees one bucket, whatever its local clock says.

  The bucket is a hash:
    tokens  tokens left at `at` (a fraction)
    at      when they were counted, microseconds since the epoch (Redis TIME)
  It expires once it would be full again, so a missing bucket is a full one.

  KEYS[1] bucket     rate:<sha256 of the key>
  ARGV[1] perSecond  rate: tokens added per second (> 0)
  ARGV[2] burst      most tokens held (>= 1)

  Returns 0 when a token was taken, else the ms until one will be there (>= 1); nothing is taken then.
]]
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])

local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
-- A clock that went back (say after a failover) refills nothing until it passes `at` again.
if now > at then
  tokens = tokens + (now - at) * rate / 1000000
  at = now
end
-- The burst may have been lowered since the bucket was filled.
tokens = math.min(tokens, burst)

if tokens < 1 then
  return math.max(1, math.ceil((at - now) / 1000 + (1 - tokens) * 1000 / rate))
end
tokens = tokens - 1
-- '%.0f': tostring would print 16-digit microseconds in exponent form and lose them.
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', string.format('%.0f', at))
redis.call('PEXPIRE', KEYS[1], string.format('%.0f', math.ceil((at - now) / 1000 + (burst - tokens) * 1000 / rate) + 1000))
return 0
