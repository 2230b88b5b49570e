#!lua flags=allow-oom
--[[
  Applies one batch of ingest entries for each of several partitions, each atomically and all in
  one call (actors/partition/partition-actor.ts gathers an apply round's batches): on one Redis,
  every partition a worker applies in a round; on a Redis Cluster, whose partitions sit in
  different slots, one partition a call. What a call costs apart from its entries (its
  arguments, the helpers, the schema lists) is paid once for all of them.

  For each partition N:
  Fencing: nothing is written unless the lease still names this worker.
  Exactly once: entries at or below applied:{pN} are skipped (redelivery); the entries above it
  must be exactly the next entries of the stream, else nothing is written for N and GAP is
  returned (a fenced former owner may have read some of them; the runner re-reads the stream
  from there). Every ID of the batch is acknowledged, the last applied ID recorded and, when the
  caller asks and the stream holds more than 512 entries, the stream trimmed below it (never
  below an entry still pending in a group), all in this one call. User keys are built here by
  completing the partition's prefixes in ARGV[9], which engine/infra/redis/topology.ts lays out
  (applyKeyPrefixes), so they share the partition's slot.

  Entries (schemas/ingest.ts, JSON):
    identify, tags  create the user; merge tags ("" deletes; new keys past ARGV[6] are ignored)
    subscribe       create the user; upsert subs field "TYPE:token" (schemas/state.ts
                    StoredSubscription); past ARGV[7] drop the oldest by registered_at; append the
                    registration to outbox:{pN} so the token's owner record is settled afterwards
    event           create the user; with an idempotency_key, drop the event when the partition's
                    idempotency window holds its fingerprint from within ARGV[8] ms of its time,
                    else add it there; append to changes:{pN}
    receipt         create the user; append to changes:{pN}
    detach          drop the subscription if it was registered at or before the detach's
                    registered_at; never creates a user
    retire          mark the subscription retired (a provider said its token is dead) unless it
                    was registered again after the send (sent_at); never creates a user
  Events and receipts create a user but do not move its updated_at (they are not state changes).
  An entry stamped by a gateway's writer (w, n) is skipped when that writer already had an entry
  at or past n applied in this partition (writer:{pN}:w, kept as long as idempotency keys): a
  copy of an append whose reply was lost, sent again or replayed from the spill journal.
  Every user the batch created or changed is in a `users` change after the batch's entries
  (schemas/changes.ts UsersChange; one for up to 64 users): its JSON names them, and a field `r`
  for each, in the same order, holds the user's record as the batch stored it (MessagePack, no
  JSON built here), so the recorder refreshes its row in the ClickHouse mirror without reading the
  user back, and a batch costs one append for its users.
  changes:{pN} is never trimmed here: its consumer, the recorder, trims what it has acknowledged.
  Invalid entries (not JSON, wrong shape) are skipped and counted, never retried forever. A bad
  stream ID (a caller's bug) fails the whole call before anything is written.

  KEYS[1], KEYS[2], ...  partitions {lease, applied, ingest, changes, outbox}
  ARGV[1] worker            worker id that must hold each lease
  ARGV[2] subscriptionTypes JSON array: the subscription types an entry may name
  ARGV[3] receiptKinds      JSON array: the receipt kinds an entry may name
  ARGV[4] group             consumer group of the ingest streams
  ARGV[5] idempotencyMs     how long a writer's sequence is kept, ms
  ARGV[6] maxTags           most tags per user
  ARGV[7] maxSubscriptions  most subscriptions per user
  ARGV[8] windowMs          idempotency window: a copy within this many ms of the original is dropped
  ARGV[9] batches           JSON array, one object per partition in the order of KEYS:
                            prefixes   key kind (user, idem, window, writer) -> the partition's
                                       prefix of such keys
                            readOutbox true: read the outbox's length (the caller is not sure its last
                                       settlement went through)
                            mayTrim    true: trim the stream if it holds more than 512 entries,
                                       and count the entries pending (the caller says so every
                                       few hundred entries applied)
                            count      how many entries of the list below are this partition's
  ARGV[10], ARGV[11], ...  entries {id, json}  stream ID, entry JSON; each partition's pairs in
                            ascending ID order, partition after partition

  The idempotency window of partition N (docs/architecture.md, "The idempotency window"): per UTC
  day d of an event's `at`, a linear hash table (include/lhash.lua) at `window..d`, mapping the
  16-byte fingerprint (SHA-1 of project, external_id and key) to the ms of the day. Keys written
  by 0.11.1 (idem:{pN}:proj:key) are still looked up while `window..'legacy'` holds a time past
  the event's (engine/state/users/layout.ts).

  Returns {code, applied, invalid, appliedId, outbox, pending, registrations} for each partition,
  in the order of KEYS, one list: code 0 ok, 1 not the lease owner, 2 gap; appliedId is the
  partition's last applied ID after the call; outbox is the length of outbox:{pN} (the caller
  settles it when above 0), read when the batch applied nothing new (a reply lost and the call
  resent) or readOutbox asks, else how many it registered; pending, counted only when mayTrim, is
  how many entries the group still has pending after the acks (above 0: entries that no batch
  holds, and the caller claims them), else 0; registrations, when the outbox's length was not
  read, is what the batch appended to it as a flat list {id, json, id, json, ...}: the whole
  outbox, so the caller settles it without reading it back.
]]
-- #include streams
-- #include user
-- #include lhash

local OK, NOT_OWNER, GAP = 0, 1, 2
local FIRST_ENTRY = 10
local TRIM_ABOVE = 512
-- Users in one `users` change: a batch of thousands of entries still makes entries of bounded size.
local USERS_PER_CHANGE = 64

local worker, group = ARGV[1], ARGV[4]
local idemTtl, maxTags, maxSubs = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local windowMs = tonumber(ARGV[8])
local batches = cjson.decode(ARGV[9])

-- A bad stream ID is a caller's bug: refused before anything is written.
for i = FIRST_ENTRY, #ARGV, 2 do
  if not idParts(ARGV[i]) then
    return redis.error_reply('ERR applyBatch: bad stream id ' .. tostring(ARGV[i]))
  end
end

-- JSON out for what a caller sent (an event's properties): cjson prints 14 significant digits, so
-- numbers are printed here at the shortest precision that reads back the same double (as
-- JavaScript does); keys sorted for determinism. Stored subscriptions and outbox entries hold only
-- text and ms times (13 digits), which cjson prints exactly, at a tenth of the cost.
local function number(n)
  if n ~= n or n == math.huge or n == -math.huge then return 'null' end
  if n == math.floor(n) and math.abs(n) < 1e15 then return string.format('%.0f', n) end
  for digits = 15, 16 do
    local text = string.format('%.' .. digits .. 'g', n)
    if tonumber(text) == n then return text end
  end
  return string.format('%.17g', n)
end

local encode
encode = function(value)
  local kind = type(value)
  if kind == 'string' then return cjson.encode(value) end
  if kind == 'number' then return number(value) end
  if kind == 'boolean' then return tostring(value) end
  if kind ~= 'table' then return 'null' end
  local fields = {}
  for k, v in pairs(value) do fields[#fields + 1] = { tostring(k), v } end
  table.sort(fields, function(a, b) return a[1] < b[1] end)
  local parts = {}
  for _, f in ipairs(fields) do parts[#parts + 1] = cjson.encode(f[1]) .. ':' .. encode(f[2]) end
  return '{' .. table.concat(parts, ',') .. '}'
end

local function int(n) return string.format('%.0f', n) end
local function isStr(v) return type(v) == 'string' end
local function optStr(v) return v == nil or type(v) == 'string' end
local function optTable(v) return v == nil or type(v) == 'table' end
local function setOf(json)
  local set = {}
  for _, v in ipairs(cjson.decode(json)) do set[v] = true end
  return set
end
local SUB_TYPES, RECEIPTS = setOf(ARGV[2]), setOf(ARGV[3])
local DEVICE_FIELDS = { 'device_model', 'device_os', 'app_version', 'web_auth', 'web_p256' }

local function valid(e)
  if type(e) ~= 'table' or not isStr(e.project) or e.project == '' or string.find(e.project, ':', 1, true)
    or not isStr(e.external_id) or e.external_id == '' or type(e.at) ~= 'number' then
    return false
  end
  local op = e.op
  if op == 'identify' then return optTable(e.tags) end
  if op == 'tags' then return type(e.tags) == 'table' end
  if op == 'subscribe' then
    for _, f in ipairs(DEVICE_FIELDS) do
      if not optStr(e[f]) then return false end
    end
    return SUB_TYPES[e.type] == true and isStr(e.token)
  end
  if op == 'event' then
    return isStr(e.name) and type(e.ts) == 'number' and optTable(e.properties) and optStr(e.idempotency_key)
  end
  if op == 'receipt' then return isStr(e.svc_message_id) and RECEIPTS[e.kind] == true and type(e.ts) == 'number' end
  if op == 'detach' then return SUB_TYPES[e.type] == true and isStr(e.token) and type(e.registered_at) == 'number' end
  if op == 'retire' then return SUB_TYPES[e.type] == true and isStr(e.token) and type(e.sent_at) == 'number' end
  return false
end

-- Deletes first, then existing keys, then new keys in key order until the limit is reached.
local function mergeTags(e, user)
  local tags, sets = user.t, {}
  for k, v in pairs(e.tags) do
    if isStr(k) and isStr(v) then
      if v == '' then tags[k] = nil else sets[#sets + 1] = k end
    end
  end
  table.sort(sets)
  local count = 0
  for _ in pairs(tags) do count = count + 1 end
  for _, k in ipairs(sets) do
    if tags[k] then
      tags[k] = e.tags[k]
    elseif count < maxTags then
      tags[k] = e.tags[k]
      count = count + 1
    end
  end
end

local function dropOldestSubs(subs, keep)
  local others = {}
  for field, sub in pairs(subs) do
    if field ~= keep then others[#others + 1] = { field, sub[4] } end
  end
  table.sort(others, function(a, b)
    if a[2] ~= b[2] then return a[2] < b[2] end
    return a[1] < b[1]
  end)
  for i = 1, #others + 1 - maxSubs do subs[others[i][1]] = nil end
end

local DAY_MS = 86400000
-- A day's table outlives its day by the window, and by an hour more for clocks apart.
local KEEP_MS = windowMs + 3600000
local function dayExpiry(day) return (day + 1) * DAY_MS + KEEP_MS end

-- One partition's batch: KEYS[k .. k + 4], its entries ARGV[first .. last] in {id, json} pairs.
local function applyPartition(k, first, last, batch)
  local leaseKey, appliedKey, ingestKey, changesKey, outboxKey = KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4]
  local keyPrefixes = batch.prefixes
  local readOutbox, mayTrim = batch.readOutbox == true, batch.mayTrim == true
  -- The batch's outbox entries, {id, json} flat.
  local registrations = {}

  -- Entries decoded once, up front: their writers' sequences are read with the lease and the
  -- applied ID in one MGET (the keys share the partition's slot), since each command costs a small
  -- batch as much as an entry does.
  local decoded, writerKeys, writerAt = {}, {}, {}
  for i = first + 1, last, 2 do
    local ok, e = pcall(cjson.decode, ARGV[i])
    decoded[i] = ok and e
    if ok and type(e) == 'table' and type(e.w) == 'string' and not writerAt[e.w] then
      writerKeys[#writerKeys + 1] = keyPrefixes.writer .. e.w
      writerAt[e.w] = #writerKeys + 3
    end
  end

  local windowPrefix = keyPrefixes.window
  local fence = redis.call('MGET', leaseKey, appliedKey, windowPrefix .. 'legacy', unpack(writerKeys))
  if fence[1] ~= worker then
    return { NOT_OWNER, 0, 0, '', 0, 0, {} }
  end
  -- Until when 0.11.1's layout may still be met: its users' hashes and its idempotency markers.
  local legacyUntil = tonumber(fence[3]) or 0

  local applied = fence[2] or '0-0'
  local lastMs, lastSeq = idParts(applied)
  local fresh = {}
  for i = first, last, 2 do
    local ms, seq = idParts(ARGV[i])
    if ms > lastMs or (ms == lastMs and seq > lastSeq) then
      fresh[#fresh + 1] = i
      lastMs, lastSeq = ms, seq
    end
  end

  if #fresh > 0 then
    local range = redis.call('XRANGE', ingestKey, '(' .. applied, ARGV[fresh[#fresh]], 'COUNT', #fresh + 1)
    local contiguous = #range == #fresh
    for j = 1, #fresh do
      if not contiguous then break end
      contiguous = range[j][1] == ARGV[fresh[j]]
    end
    if not contiguous then
      return { GAP, 0, 0, applied, 0, 0, {} }
    end
  end

  -- The batch's users, loaded once and saved once after its entries: key -> record.
  local users, dirty = {}, {}
  local function userKey(e)
    return keyPrefixes.user .. e.project .. ':' .. e.external_id
  end

  local function userOf(e)
    local key = userKey(e)
    local user = users[key]
    if not user then
      user = loadUser(key, e.at >= legacyUntil)
      users[key] = user
    end
    return user, key
  end

  -- Users created or changed by this batch, in first-touch order: { key, project, external_id }.
  local touched, touchedSeen = {}, {}
  local function markTouched(e, key)
    dirty[key] = true
    if touchedSeen[key] then return end
    touchedSeen[key] = true
    touched[#touched + 1] = { key, e.project, e.external_id }
  end

  local function touchUser(e, changed)
    local user, key = userOf(e)
    if not user.c then
      user.c, user.u = e.at, e.at
      markTouched(e, key)
    elseif changed then
      if (user.u or 0) < e.at then user.u = e.at end
      markTouched(e, key)
    end
    return user
  end

  local function subscribe(e, user)
    local field = e.type .. ':' .. e.token
    local old = user.s[field]
    local sub = { 0, (old and old[2]) or e.at, e.at, e.at }
    for i, f in ipairs(DEVICE_FIELDS) do
      local v = e[f]
      if v == nil and old then v = old[4 + i] end
      sub[4 + i] = v or false
    end
    user.s[field] = sub
    local count = 0
    for _ in pairs(user.s) do count = count + 1 end
    if count > maxSubs then dropOldestSubs(user.s, field) end
    local json = cjson.encode({
      project = e.project, external_id = e.external_id, type = e.type, token = e.token, registered_at = e.at,
    })
    registrations[#registrations + 1] = redis.call('XADD', outboxKey, '*', 'd', json)
    registrations[#registrations + 1] = json
  end

  local function detach(e)
    local user, key = userOf(e)
    local field = e.type .. ':' .. e.token
    local old = user.s[field]
    if old and old[4] <= e.registered_at then
      user.s[field] = nil
      touchUser(e, true)
      dirty[key] = true
    end
  end

  local function retire(e)
    local user = userOf(e)
    local sub = user.s[e.type .. ':' .. e.token]
    if sub and sub[1] ~= 1 and sub[4] <= e.sent_at then
      sub[1], sub[3] = 1, e.at
      touchUser(e, true)
    end
  end

  local function change(record)
    redis.call('XADD', changesKey, '*', 'd', encode(record))
  end

  local function dayTable(day) return lhashTable(windowPrefix .. string.format('%d', day)) end

  local function isLegacyCopy(e)
    return e.at < legacyUntil and redis.call('EXISTS', keyPrefixes.idem .. e.project .. ':' .. e.idempotency_key) == 1
  end

  -- True when the window holds the event's fingerprint from within windowMs of its time; else adds it.
  local function seenBefore(e)
    local fp = lhashFingerprint(redis.sha1hex(e.project .. '\0' .. e.external_id .. '\0' .. e.idempotency_key))
    local at = e.at
    -- A day after the event's own too: a copy taken by a gateway whose clock runs behind.
    for day = math.floor((at - windowMs) / DAY_MS), math.floor(at / DAY_MS) + 1 do
      local ms = lhashGet(dayTable(day), fp)
      if ms and math.abs(at - (day * DAY_MS + tonumber(ms))) <= windowMs then return true end
    end
    if isLegacyCopy(e) then return true end
    local day = math.floor(at / DAY_MS)
    lhashSet(dayTable(day), fp, int(at - day * DAY_MS), dayExpiry(day))
    return false
  end

  -- The change of an event is its entry's own JSON text with kind and id put in front (its other
  -- fields, op, at and the writer's stamp, ride along): encode() costs some 20 µs an event.
  local function event(e, id, json)
    if e.idempotency_key and seenBefore(e) then return end
    if string.byte(json, 1) == 123 then
      redis.call('XADD', changesKey, '*', 'd', '{"kind":"event","id":"' .. id .. '",' .. string.sub(json, 2))
      return
    end
    change({
      kind = 'event', id = id, project = e.project, external_id = e.external_id, name = e.name,
      properties = e.properties, idempotency_key = e.idempotency_key, ts = e.ts,
    })
  end

  local function receipt(e, id)
    redis.call('XADD', changesKey, '*', 'd', table.concat({
      '{"kind":"receipt","id":"', id, '","project":', cjson.encode(e.project), ',"external_id":', cjson.encode(e.external_id),
      ',"svc_message_id":', cjson.encode(e.svc_message_id), ',"receipt":"', e.kind, '","ts":', number(e.ts), '}',
    }))
  end

  -- Highest sequence applied per writer: as stored, then as this batch moves it.
  local writerSeq, writerMoved = {}, {}
  local function writerKey(w) return keyPrefixes.writer .. w end

  local function isCopy(e)
    if not isStr(e.w) or type(e.n) ~= 'number' then return false end
    local seen = writerSeq[e.w] or tonumber(fence[writerAt[e.w]]) or -1
    writerSeq[e.w] = seen
    if e.n <= seen then return true end
    writerSeq[e.w], writerMoved[e.w] = e.n, true
    return false
  end

  local appliedCount, invalid = 0, 0
  for _, i in ipairs(fresh) do
    local e = decoded[i + 1]
    if not (e and valid(e)) then
      invalid = invalid + 1
    elseif not isCopy(e) then
      local op = e.op
      if op == 'detach' then
        detach(e)
      elseif op == 'retire' then
        retire(e)
      else
        local user = touchUser(e, op ~= 'event' and op ~= 'receipt')
        if (op == 'identify' or op == 'tags') and e.tags then mergeTags(e, user) end
        if op == 'subscribe' then subscribe(e, user) end
        if op == 'event' then event(e, ARGV[i], ARGV[i + 1]) end
        if op == 'receipt' then receipt(e, ARGV[i]) end
      end
      appliedCount = appliedCount + 1
    end
  end

  local stored = {}
  for key in pairs(dirty) do stored[key] = saveUser(key, users[key]) end
  local changed, records = {}, {}
  for i, touch in ipairs(touched) do
    changed[#changed + 1] = '{"project":' .. cjson.encode(touch[2]) .. ',"external_id":' .. cjson.encode(touch[3]) .. '}'
    records[#records + 1], records[#records + 2] = 'r', stored[touch[1]]
    if #changed == USERS_PER_CHANGE or i == #touched then
      redis.call('XADD', changesKey, '*', 'd', '{"kind":"users","users":[' .. table.concat(changed, ',') .. ']}', unpack(records))
      changed, records = {}, {}
    end
  end
  lhashSave(function(t) return dayExpiry(tonumber(string.sub(t.key, #windowPrefix + 1))) end)
  for w in pairs(writerMoved) do
    redis.call('SET', writerKey(w), int(writerSeq[w]), 'PX', idemTtl)
  end

  ackArgs(ingestKey, group, first, 2, last)
  if #fresh > 0 then
    applied = ARGV[fresh[#fresh]]
    redis.call('SET', appliedKey, applied)
  end
  -- Trimming reads every group's progress (XINFO GROUPS, XPENDING): a third of a small batch's
  -- cost. So the stream keeps up to TRIM_ABOVE entries, and its length is read only when asked;
  -- the entries left pending are counted then too (a lost read's come back with a gap or the
  -- reader's recovery; what is left, such as acks a failover lost, waits for this count).
  local pending = 0
  if mayTrim then
    if redis.call('XLEN', ingestKey) > TRIM_ABOVE then
      pending = select(2, trimSafely(ingestKey, applied, group))
    else
      pending = redis.call('XPENDING', ingestKey, group)[1]
    end
  end

  if readOutbox or #fresh == 0 then
    return { OK, appliedCount, invalid, applied, redis.call('XLEN', outboxKey), pending, {} }
  end
  return { OK, appliedCount, invalid, applied, #registrations / 2, pending, registrations }
end

local out, first = {}, FIRST_ENTRY
for n, batch in ipairs(batches) do
  local last = first + 2 * batch.count - 1
  for _, v in ipairs(applyPartition(5 * n - 4, first, last, batch)) do out[#out + 1] = v end
  first = last + 1
end
return out
