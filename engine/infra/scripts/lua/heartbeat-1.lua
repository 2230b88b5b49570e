#!lua flags=allow-oom
--[[
  One heartbeat of a worker into its role's worker set (engine/infra/runner/partition-runner.ts): its
  expiry is moved on, expired members are dropped, and the live members are returned. A script so
  that it runs at maxmemory: the lease round is what lets the workers free memory.

  KEYS[1] workers    workers (or workers:<role>): sorted set of worker id to heartbeat expiry, ms
  ARGV[1] worker     this worker's id
  ARGV[2] now        the worker's clock, ms
  ARGV[3] expiresAt  now + LEASE_MS

  Returns the live worker ids (expiry after now), this one included.
]]
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
return redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[2], '+inf')
