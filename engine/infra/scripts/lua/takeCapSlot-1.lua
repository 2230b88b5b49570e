#!lua flags=allow-oom
--[[
  Takes a slot of a user's frequency cap for one notification (docs/api.md#frequency-caps), right
  before its send starts: in the user's partition, so two notifications racing for the last slot
  get one between them. A notification holds one slot whatever its number of subscriptions and
  retries.

  KEYS[1] sends     fcap:{pN}:<project>:<external_id>:<channel>, sorted set notification -> time
  ARGV[1] member    the notification id
  ARGV[2] max       sends allowed in the window
  ARGV[3] windowMs  the window
  ARGV[4] now       ms

  Returns 1 when the send may go (a slot taken now or before), 0 when the cap is reached.
]]
local now = tonumber(ARGV[4])
local window = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 1 end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('PEXPIRE', KEYS[1], window)
return 1
