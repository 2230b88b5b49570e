-- A user's record (engine/state/users/user-record.ts reads it in TypeScript): one string key per user,
-- MessagePack of a map, so a user with a few tags and a subscription fits in one small allocation
-- (docs/architecture.md, "A user's record"). Inlined where a script says `-- #include user`.
--   c  created_at, ms (absent: the user is not created yet, only their consent is known)
--   u  updated_at, ms
--   t  tag key -> stored value (engine/state/users/tag-codec.ts)
--   s  "TYPE:token" -> { state (0 live, 1 retired), created_at, updated_at, registered_at,
--      device_model, device_os, app_version, web_auth, web_p256 }, absent fields false
--   o  TYPE -> { opted_out, at }

local SUB_DEVICE = { 'device_model', 'device_os', 'app_version', 'web_auth', 'web_p256' }

-- The four hashes 0.11.1 kept a user in, named after the record's key: `P usr:{pN}:proj:ext`
-- becomes `P user:{pN}:proj:ext`, `P tags:…`, `P subs:…` and `P consent:…` (same slot).
local function legacyKeys(key)
  local prefix, rest = string.match(key, '^(.*)usr:(%b{}:.*)$')
  return { user = prefix .. 'user:' .. rest, tags = prefix .. 'tags:' .. rest, subs = prefix .. 'subs:' .. rest, consent = prefix .. 'consent:' .. rest }
end

local function hashOf(key)
  local all, out = redis.call('HGETALL', key), {}
  for i = 1, #all, 2 do out[all[i]] = all[i + 1] end
  return out
end

-- A user as 0.11.1's four hashes held them, in the record's parts; nil when there are none.
local function legacyUser(key)
  local keys = legacyKeys(key)
  if redis.call('EXISTS', keys.user, keys.consent) == 0 then return nil end
  local base, user = hashOf(keys.user), { t = hashOf(keys.tags), s = {}, o = {}, legacy = true }
  user.c, user.u = tonumber(base.created_at), tonumber(base.updated_at)
  for field, json in pairs(hashOf(keys.subs)) do
    local ok, sub = pcall(cjson.decode, json)
    if ok and type(sub) == 'table' then
      local packed = { sub.state == 'retired' and 1 or 0, tonumber(sub.created_at) or 0, tonumber(sub.updated_at) or 0, tonumber(sub.registered_at) or 0 }
      for i, name in ipairs(SUB_DEVICE) do packed[4 + i] = (type(sub[name]) == 'string' and sub[name]) or false end
      user.s[field] = packed
    end
  end
  for t, json in pairs(hashOf(keys.consent)) do
    local ok, c = pcall(cjson.decode, json)
    if ok and type(c) == 'table' then user.o[t] = { c.opted_out == true, tonumber(c.at) or 0 } end
  end
  return user
end

-- An empty MessagePack array or map both unpack to {}: every part is read as a map. A user the
-- layout upgrade has not reached yet is read from 0.11.1's hashes (engine/state/users/layout.ts),
-- unless the caller knows there are none (`noLegacy`).
local function loadUser(key, noLegacy)
  local packed = redis.call('GET', key)
  local user = (packed and cmsgpack.unpack(packed)) or (not noLegacy and legacyUser(key)) or {}
  user.t, user.s, user.o = user.t or {}, user.s or {}, user.o or {}
  return user
end

local function isEmptyTable(t) return next(t) == nil end

-- A user's record as stored: its empty parts left out.
local function packUser(user)
  local out = { c = user.c, u = user.u }
  if not isEmptyTable(user.t) then out.t = user.t end
  if not isEmptyTable(user.s) then out.s = user.s end
  if not isEmptyTable(user.o) then out.o = user.o end
  return cmsgpack.pack(out)
end

-- Saving a user read from 0.11.1's hashes deletes them: the record holds it all now. Returns the
-- record as stored.
local function saveUser(key, user)
  local packed = packUser(user)
  redis.call('SET', key, packed)
  if user.legacy then
    local legacy = legacyKeys(key)
    redis.call('DEL', legacy.user, legacy.tags, legacy.subs, legacy.consent)
  end
  return packed
end

local function consentJson(c)
  return '{"opted_out":' .. tostring(c[1] == true) .. ',"at":' .. string.format('%.0f', c[2]) .. '}'
end
