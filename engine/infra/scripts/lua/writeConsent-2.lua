#!lua flags=allow-oom
--[[
  Writes one user's consent for a subscription type into their record and appends a `user` change
  for the recorder, atomically (engine/state/users/consent.ts). It runs at maxmemory: an opt-out is never
  lost to overload (docs/api.md#opt-out-and-opt-in), and it is small. A user not created yet gets a
  record holding only their consent.

  KEYS[1] user      usr:{pN}:proj:ext (engine/infra/scripts/lua/include/user.lua)
  KEYS[2] changes   changes:{pN}
  ARGV[1] type      the subscription type
  ARGV[2] optedOut  '1' opted out, '0' opted in
  ARGV[3] at        when, ms
  ARGV[4] change    JSON UserChange

  Returns the change's stream ID.
]]
-- #include user

local user = loadUser(KEYS[1])
user.o[ARGV[1]] = { ARGV[2] == '1', tonumber(ARGV[3]) }
saveUser(KEYS[1], user)
return redis.call('XADD', KEYS[2], '*', 'd', ARGV[4])
