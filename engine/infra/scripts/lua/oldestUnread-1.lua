#!lua flags=no-writes
--[[
  The oldest entry of a stream that a consumer group has not acknowledged: its smallest pending ID,
  else the first entry after what it has read, else none (gateway/ingest/pressure.ts: how far
  behind the workers are). Before the group exists, the stream's first entry.

  KEYS[1] stream  ingest:{pN}, changes:{pN} or outcomes:{pN}
  ARGV[1] group   its consumer group

  Returns the entry's ID, or "" when the group has nothing left.
]]
local groups = redis.pcall('XINFO', 'GROUPS', KEYS[1])
if groups.err then return '' end
local from = '-'
for _, info in ipairs(groups) do
  local g = {}
  for i = 1, #info, 2 do g[info[i]] = info[i + 1] end
  if g['name'] == ARGV[1] then
    if tonumber(g['pending']) > 0 then return redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1)[1][1] end
    from = '(' .. g['last-delivered-id']
  end
end
local first = redis.call('XRANGE', KEYS[1], from, '+', 'COUNT', 1)[1]
if first then return first[1] end
return ''
