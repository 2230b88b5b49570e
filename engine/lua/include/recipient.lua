-- A dispatch job's user as loadRecipient-4.lua and loadRecipients-n.lua answer it (engine/scripts.ts
-- inlines this file where a script says `-- #include recipient`). `types` and `only` are sets of
-- subscription types and fields (`only` nil for every subscription of the types).

local function typeSet(spaced)
  local types = {}
  for t in string.gmatch(spaced, '%S+') do types[t] = true end
  return types
end

-- {language, subs, timezone, tags, canceled, consent}: see loadRecipient-4.lua.
local function recipient(subsKey, tagsKey, canceledKey, consentKey, types, only, allTags)
  local subs = {}
  local hash = redis.call('HGETALL', subsKey)
  for i = 1, #hash, 2 do
    local field = hash[i]
    if types[string.match(field, '^[^:]*')] and (only == nil or only[field]) then subs[#subs + 1] = hash[i + 1] end
  end
  local tags = false
  if allTags then tags = redis.call('HGETALL', tagsKey) end
  local consent = {}
  for t in pairs(types) do
    local stored = redis.call('HGET', consentKey, t)
    if stored then
      consent[#consent + 1] = t
      consent[#consent + 1] = stored
    end
  end
  return { redis.call('HGET', tagsKey, 'language'), subs, redis.call('HGET', tagsKey, 'timezone'), tags, redis.call('EXISTS', canceledKey), consent }
end
