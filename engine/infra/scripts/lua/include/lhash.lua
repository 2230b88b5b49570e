-- Linear hash tables of 16-byte fingerprints, for sets that must cost a few dozen bytes an entry
-- (docs/architecture.md, "The idempotency window" and "The token index"): the window (applyBatch-n.lua) and the
-- token index (claimToken-2.lua). A table is a hash at its key M holding its level L, split
-- pointer s and count n, and buckets M:<i>, hashes of fingerprint to value, each small enough to
-- stay listpack-encoded. Inlined where a script says `-- #include lhash`.

-- Mean entries per bucket once every bucket is split: unsplit buckets hold about twice as many,
-- still far below the 128 entries past which Redis leaves the compact listpack encoding.
local LHASH_LOAD = 32

local lhashTables = {}

-- A table's state, read once per script call.
local function lhashTable(key)
  local t = lhashTables[key]
  if not t then
    local meta = redis.call('HMGET', key, 'L', 's', 'n')
    t = { key = key, L = tonumber(meta[1]) or 0, s = tonumber(meta[2]) or 0, n = tonumber(meta[3]) or 0 }
    lhashTables[key] = t
  end
  return t
end

-- A fingerprint from 32 hex digits (the first 128 bits of a SHA digest); its first 4 bytes are its hash.
local function lhashFingerprint(hex)
  return struct.pack('>I4I4I4I4', tonumber(string.sub(hex, 1, 8), 16), tonumber(string.sub(hex, 9, 16), 16),
    tonumber(string.sub(hex, 17, 24), 16), tonumber(string.sub(hex, 25, 32), 16))
end

local function lhashBucket(t, fp)
  local h = struct.unpack('>I4', fp)
  local i = h % 2 ^ t.L
  if i < t.s then i = h % 2 ^ (t.L + 1) end
  return string.format('%s:%d', t.key, i)
end

local function lhashGet(t, fp)
  if t.n == 0 then return nil end
  return redis.call('HGET', lhashBucket(t, fp), fp)
end

-- Splits bucket s into s and s + 2^L: the table grows a bucket at a time. expireAt (ms) or nil.
local function lhashSplit(t, expireAt)
  local from = string.format('%s:%d', t.key, t.s)
  local to = string.format('%s:%d', t.key, t.s + 2 ^ t.L)
  local all = redis.call('HGETALL', from)
  local moved, gone = {}, {}
  for i = 1, #all, 2 do
    if struct.unpack('>I4', all[i]) % 2 ^ (t.L + 1) ~= t.s then
      moved[#moved + 1], moved[#moved + 2] = all[i], all[i + 1]
      gone[#gone + 1] = all[i]
    end
  end
  if #gone > 0 then
    redis.call('HSET', to, unpack(moved))
    if expireAt then redis.call('PEXPIREAT', to, expireAt) end
    redis.call('HDEL', from, unpack(gone))
  end
  t.s = t.s + 1
  if t.s == 2 ^ t.L then t.L, t.s = t.L + 1, 0 end
end

-- Sets a fingerprint's value; a new one counts and may split a bucket. expireAt (ms) or nil.
local function lhashSet(t, fp, value, expireAt)
  local bucket = lhashBucket(t, fp)
  if redis.call('HSET', bucket, fp, value) == 0 then return end
  if t.n == 0 and expireAt then redis.call('PEXPIREAT', bucket, expireAt) end
  t.n, t.dirty = t.n + 1, true
  if t.n > LHASH_LOAD * (2 ^ t.L + t.s) then lhashSplit(t, expireAt) end
end

-- Writes back the state of every table changed since the last save. expireAt(t) gives a table's
-- expiry, or nil.
local function lhashSave(expireAt)
  for key, t in pairs(lhashTables) do
    if t.dirty then
      redis.call('HSET', key, 'L', t.L, 's', t.s, 'n', t.n)
      local at = expireAt and expireAt(t)
      if at then redis.call('PEXPIREAT', key, at) end
      t.dirty = false
    end
  end
end
