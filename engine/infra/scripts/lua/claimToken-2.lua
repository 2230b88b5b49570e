#!lua flags=allow-oom
--[[
  Records a user's registration of a subscription token in the token index and returns the
  detaches still owed (engine/state/users/token-index.ts). The newest registration wins; on equal
  registered_at the owner already recorded keeps it, so every user that loses holds a
  registration not newer than the detach it is sent, and a detach never removes a winner.

  The index of partition pT is a linear hash table (include/lhash.lua) from the subscription's
  id (its 16 bytes: engine/state/users/subscription-ids.ts) to `<registered_at>:<owner>`. Detaches owed
  on a token are a hash of their own, external_id to the registered_at up to which the user must
  drop it, until clearDetach-1.lua removes them once the detach entry is appended; so a
  settlement interrupted by a crash sends them again when its outbox entry is replayed.

  KEYS[1] index         tok:{pT}
  KEYS[2] owed          tokd:{pT}:<id>
  ARGV[1] id            the subscription's id, 32 hex digits
  ARGV[2] externalId    external_id of the registering user
  ARGV[3] registeredAt  registered_at of that registration, ms
  ARGV[4], ARGV[5], ...  owed {externalId, registeredAt}  detaches owed besides (a record of 0.11.1 adopted)

  Returns a flat array: ext1, at1, ext2, at2, ... of every detach owed on this token.
]]
-- #include lhash

local index, owedKey = lhashTable(KEYS[1]), KEYS[2]
local fp = lhashFingerprint(ARGV[1])
local claimant, at = ARGV[2], tonumber(ARGV[3])

-- Owing a detach keeps the highest registered_at: it removes strictly more.
local function owe(ext, upTo)
  local current = tonumber(redis.call('HGET', owedKey, ext))
  if current == nil or upTo > current then redis.call('HSET', owedKey, ext, string.format('%.0f', upTo)) end
end

local function record(ext, ms) lhashSet(index, fp, string.format('%.0f', ms) .. ':' .. ext) end

local entry = lhashGet(index, fp)
if not entry then
  record(claimant, at)
else
  local colon = string.find(entry, ':', 1, true)
  local ownerAt, owner = tonumber(string.sub(entry, 1, colon - 1)), string.sub(entry, colon + 1)
  if owner == claimant then
    if at > ownerAt then record(claimant, at) end
  elseif at > ownerAt then
    record(claimant, at)
    -- Anything owed to the new winner predates its registration and could not remove it anyway.
    redis.call('HDEL', owedKey, claimant)
    owe(owner, at)
  else
    owe(claimant, ownerAt)
  end
end
for i = 4, #ARGV - 1, 2 do owe(ARGV[i], tonumber(ARGV[i + 1])) end
lhashSave()
return redis.call('HGETALL', owedKey)
