#!lua flags=allow-oom
--[[
  Releases a partition lease, only while this worker still owns it (engine/infra/runner/partition-runner.ts).

  KEYS[1] lease    lease:{pN} (or lease:recorder:{pN}); its value is the owning worker id
  ARGV[1] worker   worker id

  Returns 1 when released, 0 when the lease was gone or held by another worker.
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
