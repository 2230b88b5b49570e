#!lua flags=no-writes
--[[
  What stands in the way of one send (docs/architecture.md#consent-first), read by dispatch with the provider
  slot in hand, right before the request starts: the notification's cancel mark in the user's
  partition (written to every partition by engine/state/notifications/view.ts before DELETE answers)
  and the user's consent for the subscription's type. Both keys are in the partition's slot.

  KEYS[1] canceled  ncancel:{pN}:<notification>
  KEYS[2] user      usr:{pN}:<project>:<external_id> (engine/infra/scripts/lua/include/user.lua)
  ARGV[1] type      the subscription type about to be sent

  Returns {canceled, consent}: 1 when the notification is canceled, else 0; the stored consent
  JSON of the type (nil when none).
]]
-- #include user

local consent = loadUser(KEYS[2]).o[ARGV[1]]
return { redis.call('EXISTS', KEYS[1]), (consent and consentJson(consent)) or false }
