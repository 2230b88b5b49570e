#!lua flags=allow-oom
--[[
  Folds one user's hashes of 0.11.1 into their record (engine/state/users/layout.ts): what the apply
  and the consent writer do on a user's next write, done ahead of it. Nothing happens when the
  record exists already (those hashes are gone then) or when there are no such hashes.

  KEYS[1] user  usr:{pN}:proj:ext (engine/infra/scripts/lua/include/user.lua)

  Returns 1 when it folded a user, else 0.
]]
-- #include user

if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local user = legacyUser(KEYS[1])
if not user then return 0 end
saveUser(KEYS[1], user)
return 1
