-- A dispatch job's user as loadRecipient-2.lua and loadRecipients-n.lua answer it (engine/infra/scripts/registry.ts
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

-- {language, subs, timezone, tags, canceled, consent}: see loadRecipient-2.lua.
local function recipient(userKey, canceledKey, types, only, allTags)
  local user = loadUser(userKey)
  local subs = {}
  for field, sub in pairs(user.s) do
    if types.set[string.match(field, '^[^:]*')] and (only == nil or only[field]) then subs[#subs + 1] = subscriptionJson(field, sub) end
  end
  local tags = false
  if allTags then
    tags = {}
    for k, v in pairs(user.t) do tags[#tags + 1], tags[#tags + 2] = k, v end
  end
  local consent = {}
  for _, t in ipairs(types) do
    if user.o[t] then
      consent[#consent + 1] = t
      consent[#consent + 1] = consentJson(user.o[t])
    end
  end
  return { user.t.language or false, subs, user.t.timezone or false, tags, redis.call('EXISTS', canceledKey), consent }
end
