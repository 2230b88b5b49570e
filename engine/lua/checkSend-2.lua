#!lua flags=no-writes
--[[
  What stands in the way of one send (docs/architecture.md#consent-first), read by dispatch with the provider
  slot in hand, right before the request starts: the notification's cancel mark in the user's
  partition (written to every partition by engine/notifications/view.ts before DELETE answers)
  and the user's consent for the subscription's type. Both keys are in the partition's slot.

  KEYS[1] canceled  ncancel:{pN}:<notification>
  KEYS[2] consent   consent:{pN}:<project>:<external_id>
  ARGV[1] type      the subscription type about to be sent

  Returns {canceled, consent}: 1 when the notification is canceled, else 0; the stored consent
  JSON of the type (nil when none).
]]
return { redis.call('EXISTS', KEYS[1]), redis.call('HGET', KEYS[2], ARGV[1]) }
