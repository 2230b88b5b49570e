-- Stream helpers shared by scripts (engine/infra/scripts/registry.ts inlines this file where a script says
-- `-- #include streams`).

local function idParts(id)
  local ms, seq = string.match(id or '', '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end

local function idBelow(a, b)
  local ams, aseq = idParts(a)
  local bms, bseq = idParts(b)
  return ams < bms or (ams == bms and aseq < bseq)
end

-- Acknowledges ARGV[first], ARGV[first + step], ... up to ARGV[last] (default the last) in
-- `group`, in chunks: unpack is bounded by the Lua C stack.
local function ackArgs(stream, group, first, step, last)
  local ids = {}
  for i = first, last or #ARGV, step do
    ids[#ids + 1] = ARGV[i]
    if #ids == 1000 then
      redis.call('XACK', stream, group, unpack(ids))
      ids = {}
    end
  end
  if #ids > 0 then redis.call('XACK', stream, group, unpack(ids)) end
end

-- Trims `stream` below `bound`, but never below an entry still pending in any consumer group nor
-- past what a group has not read yet (docs/architecture.md#bounded-memory): a read whose reply was lost leaves
-- pending entries that no batch holds, and they must still be there when they are claimed.
-- Returns the ID trimmed to and how many entries `group` still has pending.
local function trimSafely(stream, bound, group)
  local floor, left = bound, 0
  for _, info in ipairs(redis.call('XINFO', 'GROUPS', stream)) do
    local g = {}
    for i = 1, #info, 2 do g[info[i]] = info[i + 1] end
    local lowest = g['last-delivered-id']
    if tonumber(g['pending']) > 0 then
      lowest = redis.call('XPENDING', stream, g['name'], '-', '+', 1)[1][1]
    end
    if g['name'] == group then left = tonumber(g['pending']) end
    if idBelow(lowest, floor) then floor = lowest end
  end
  redis.call('XTRIM', stream, 'MINID', '~', floor)
  return floor, left
end
