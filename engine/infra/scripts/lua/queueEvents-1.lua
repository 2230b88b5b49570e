#!lua flags=allow-oom
--[[
  Appends events to one webhook endpoint's queue (engine/state/webhooks/registry.ts). A script so that
  it runs at maxmemory: the webhooks tap must go on reading the outcome and change streams, or the
  recorder could trim none of them, and an event takes about what its stream entry gave back.

  KEYS[1] queue  whq:{w:id}
  ARGV[1], ARGV[2], ...  events {body, key}  each event's POST body and order key

  Returns the number of events appended.
]]
for i = 1, #ARGV, 2 do
  redis.call('XADD', KEYS[1], '*', 'e', ARGV[i], 'k', ARGV[i + 1])
end
return #ARGV / 2
