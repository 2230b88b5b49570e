#!lua flags=allow-oom
--[[
  Extends leases, each only while this worker still owns it (engine/infra/runner/lease.ts): one
  call for the leases a worker renews in one round, so a round costs one call, not one a lease.

  KEYS[1], KEYS[2], ...  leases {lease}  lease:{pN} (or lease:<role>:{pN}); its value is the owning worker id
  ARGV[1] worker   worker id
  ARGV[2] leaseMs  lease time, ms

  Returns, for each lease in the order of KEYS, 1 when extended, 0 when it is gone or held by
  another worker.
]]
local renewed = {}
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then
    redis.call('PEXPIRE', key, ARGV[2])
    renewed[i] = 1
  else
    renewed[i] = 0
  end
end
return renewed
