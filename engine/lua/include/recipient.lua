-- A dispatch job's user as loadRecipient-4.lua and loadRecipients-n.lua answer it (engine/scripts.ts
-- inlines this file where a script says `-- #include recipient`). `types` holds the channel's
-- subscription types as a list and as a set (`types.set`); `only` is a set of subscription fields
-- (nil for every subscription of the types).

local function channelTypes(spaced)
  local types = { set = {} }
  for t in string.gmatch(spaced, '%S+') do
    types[#types + 1] = t
    types.set[t] = true
  end
  return types
end

-- {language, subs, timezone, tags, canceled, consent}: see loadRecipient-4.lua.
local function recipient(subsKey, tagsKey, canceledKey, consentKey, types, only, allTags)
  local subs = {}
  local hash = redis.call('HGETALL', subsKey)
  for i = 1, #hash, 2 do
    local field = hash[i]
    if types.set[string.match(field, '^[^:]*')] and (only == nil or only[field]) then subs[#subs + 1] = hash[i + 1] end
  end
  local tags = false
  if allTags then tags = redis.call('HGETALL', tagsKey) end
  local consent = {}
  local stored = redis.call('HMGET', consentKey, unpack(types))
  for i, t in ipairs(types) do
    if stored[i] then
      consent[#consent + 1] = t
      consent[#consent + 1] = stored[i]
    end
  end
  return { redis.call('HGET', tagsKey, 'language'), subs, redis.call('HGET', tagsKey, 'timezone'), tags, redis.call('EXISTS', canceledKey), consent }
end
