#!lua flags=allow-oom
--[[
  Extends a partition lease, only while this worker still owns it (engine/infra/runner/partition-runner.ts).

  KEYS[1] lease    lease:{pN} (or lease:recorder:{pN}); its value is the owning worker id
  ARGV[1] worker   worker id
  ARGV[2] leaseMs  lease time, ms

  Returns 1 when extended, 0 when the lease is gone or held by another worker.
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
