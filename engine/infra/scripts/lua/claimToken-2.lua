#!lua flags=allow-oom
--[[
  Records a user's registration of a subscription token in the token index and returns the
  detaches still owed (engine/state/users/token-index.ts). The newest registration wins; on equal
  registered_at the owner already recorded keeps it, so every user that loses holds a
  registration not newer than the detach it is sent, and a detach never removes a winner.

  The index of partition pT is a linear hash table (include/lhash.lua) from the subscription's
  id (its 16 bytes: engine/state/users/subscription-ids.ts) to `<registered_at>[c]:<owner>`. Detaches owed
  on a token are a hash of their own, external_id to the registered_at up to which the user must
  drop it, until clearDetach-1.lua removes them once the detach entry is appended; so a
  settlement interrupted by a crash sends them again when its outbox entry is replayed. The `c`
  says the hash was empty when the entry was written, so a claim that owes nothing reads no hash:
  an entry without it (owed, or written before the mark existed) has its hash read, and gets the
  mark once the hash is found empty.

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

-- A token no one claimed has owed nothing yet.
local entry = lhashGet(index, fp)
local owner, ownerAt, clear = nil, nil, true
if entry then
  local colon = string.find(entry, ':', 1, true)
  local stamp = string.sub(entry, 1, colon - 1)
  clear = string.sub(stamp, -1) == 'c'
  if clear then stamp = string.sub(stamp, 1, -2) end
  owner, ownerAt = string.sub(entry, colon + 1), tonumber(stamp)
end

-- Owing a detach keeps the highest registered_at: it removes strictly more.
local function owe(ext, upTo)
  local current = not clear and tonumber(redis.call('HGET', owedKey, ext))
  if not current or upTo > current then redis.call('HSET', owedKey, ext, string.format('%.0f', upTo)) end
  clear = false
end

local winner, winnerAt = owner, ownerAt
if not entry then
  winner, winnerAt = claimant, at
elseif owner == claimant then
  if at > ownerAt then winnerAt = at end
elseif at > ownerAt then
  winner, winnerAt = claimant, at
  -- Anything owed to the new winner predates its registration and could not remove it anyway.
  if not clear then redis.call('HDEL', owedKey, claimant) end
  owe(owner, at)
else
  owe(claimant, ownerAt)
end
for i = 4, #ARGV - 1, 2 do owe(ARGV[i], tonumber(ARGV[i + 1])) end

local owed = {}
if not clear then
  owed = redis.call('HGETALL', owedKey)
  clear = #owed == 0
end
local written = string.format('%.0f', winnerAt) .. (clear and 'c' or '') .. ':' .. winner
if written ~= entry then lhashSet(index, fp, written) end
lhashSave()
return owed
