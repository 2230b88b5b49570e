-- A dispatch job's user as loadRecipients-n.lua answers it (engine/infra/scripts/registry.ts
-- inlines this file where a script says `-- #include recipient`): the record's bytes, decoded by
-- the engine (engine/state/users/user-record.ts recipientOfRecord), which picks the subscriptions,
-- tags and consent it needs. Unpacking the record and building JSON of it here cost Redis about
-- 20 µs a user (docs/performance.md). A user still in 0.11.1's hashes is answered packed as the
-- record would hold it.

-- {record, canceled}: see loadRecipients-n.lua.
local function recipient(userKey, canceledKey)
  local record = redis.call('GET', userKey)
  if not record then
    local legacy = legacyUser(userKey)
    record = (legacy and packUser(legacy)) or false
  end
  return { record, redis.call('EXISTS', canceledKey) }
end
