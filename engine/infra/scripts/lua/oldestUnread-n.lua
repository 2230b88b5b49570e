#!lua flags=no-writes
--[[
  The oldest entry of each stream that a consumer group has not acknowledged: its smallest pending
  ID, else the first entry after what it has read, else none (gateway/ingest/pressure.ts: how far
  behind the workers are). Before the group exists, the stream's first entry. A group that has
  read everything (its lag is 0, known since Redis 7.0) is answered without a look at the stream.

  KEYS[1], KEYS[2], ...  streams {stream}  ingest:{pN}, changes:{pN} or outcomes:{pN}
  ARGV[1] group   their consumer group

  Returns, for each stream in the order of KEYS, the entry's ID, or "" when the group has nothing left.
]]
local function oldest(stream)
  local groups = redis.pcall('XINFO', 'GROUPS', stream)
  if groups.err then return '' end
  local from = '-'
  for _, info in ipairs(groups) do
    local g = {}
    for i = 1, #info, 2 do g[info[i]] = info[i + 1] end
    if g['name'] == ARGV[1] then
      if tonumber(g['pending']) > 0 then return redis.call('XPENDING', stream, ARGV[1], '-', '+', 1)[1][1] end
      if g['lag'] == 0 then return '' end
      from = '(' .. g['last-delivered-id']
    end
  end
  local first = redis.call('XRANGE', stream, from, '+', 'COUNT', 1)[1]
  if first then return first[1] end
  return ''
end

local ids = {}
for i, stream in ipairs(KEYS) do ids[i] = oldest(stream) end
return ids
