#!lua flags=allow-oom
--[[
  Offers a freshly signed provider token for the token shared by every dispatch process
  (actors/dispatch/token-store.ts): it is stored unless another process already stored one that
  is not the token being replaced, and the token in force is returned either way, so all
  processes converge on one token per (team, key).

  KEYS[1] token      apns-token:<team>:<key>
  ARGV[1] json       the offered token (JSON {jwt, issuedAt, keyHash})
  ARGV[2] replacing  the jwt the offer replaces (APNs said it expired), or ''
  ARGV[3] ttlMs      how long a stored token lives

  Returns the JSON of the token in force.
]]
local current = redis.call('GET', KEYS[1])
if current and (ARGV[2] == '' or cjson.decode(current).jwt ~= ARGV[2]) then return current end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
return ARGV[1]
