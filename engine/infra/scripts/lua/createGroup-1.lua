#!lua flags=allow-oom
--[[
  Creates a consumer group from `from` (0: the stream's start), and the stream, unless the group exists
  (engine/infra/runner/consumer-loop.ts). A script so that it runs at maxmemory: a consumer that cannot
  create its group never reads, and reading is what frees memory.

  KEYS[1] stream  the stream
  ARGV[1] group   the consumer group
  ARGV[2] from    the ID after which the group reads: 0, or the time a webhooks tap starts at

  Returns 1 when created, 0 when it existed.
]]
local ok = redis.pcall('XGROUP', 'CREATE', KEYS[1], ARGV[1], ARGV[2], 'MKSTREAM')
if type(ok) == 'table' and ok.err then
  if string.sub(ok.err, 1, 9) == 'BUSYGROUP' then return 0 end
  return redis.error_reply(ok.err)
end
return 1
