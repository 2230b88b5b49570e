#!lua flags=allow-oom
--[[
  Records a user's registration of a subscription token in the token's ownership record and
  returns the detaches still owed (actors/partition/outbox-settler.ts). The newest registration
  wins; on equal registered_at the owner already recorded keeps it, so every user that loses holds
  a registration not newer than the detach it is sent, and a detach never removes a winner.

  The record is a hash:
    owner          external_id of the winning registration
    registered_at  its accept time, ms
    d:<ext>        a detach owed to user <ext>: drop the token if registered at or before this (ms)
  Owed detaches stay until clearDetach-1.lua removes them after the detach entry is appended, so a
  settlement interrupted by a crash sends them again when its outbox entry is replayed.

  KEYS[1] token         token:{pT}:proj:TYPE:token
  ARGV[1] externalId    external_id of the registering user
  ARGV[2] registeredAt  registered_at of that registration, ms

  Returns a flat array: ext1, at1, ext2, at2, ... of every detach owed on this token.
]]
local key = KEYS[1]
local claimant = ARGV[1]
local at = tonumber(ARGV[2])

-- Owing a detach keeps the highest registered_at: it removes strictly more.
local function owe(ext, upTo)
  local field = 'd:' .. ext
  local current = tonumber(redis.call('HGET', key, field))
  if current == nil or upTo > current then
    redis.call('HSET', key, field, string.format('%.0f', upTo))
  end
end

local state = redis.call('HMGET', key, 'owner', 'registered_at')
local owner = state[1]
local ownerAt = tonumber(state[2])

if not owner then
  redis.call('HSET', key, 'owner', claimant, 'registered_at', ARGV[2])
elseif owner == claimant then
  if at > ownerAt then
    redis.call('HSET', key, 'registered_at', ARGV[2])
  end
elseif at > ownerAt then
  redis.call('HSET', key, 'owner', claimant, 'registered_at', ARGV[2])
  -- Anything owed to the new winner predates its registration and could not remove it anyway.
  redis.call('HDEL', key, 'd:' .. claimant)
  owe(owner, at)
else
  owe(claimant, ownerAt)
end

local owed = {}
local all = redis.call('HGETALL', key)
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 'd:' then
    owed[#owed + 1] = string.sub(all[i], 3)
    owed[#owed + 1] = all[i + 1]
  end
end
return owed
