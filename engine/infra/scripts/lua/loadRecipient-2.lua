#!lua flags=no-writes
--[[
  Loads what a dispatch job needs of its user (actors/dispatch/dispatch-handler.ts) in one call:
  their subscriptions of the notification's channel, their `language` and `timezone` tags, and
  what stands in the way of a send as checkSend-2.lua reads it (the notification's cancel mark in
  the user's partition, the user's consent), for the sends that take their provider slot at once
  when the reply comes back. A subscription's field is `<type>:<token>`, so those of other
  channels (and, for a retry, those not to retry; for a notification by subscription id, those it
  does not target) are left out here by name.

  KEYS[1] user      usr:{pN}:<project>:<external_id> (engine/infra/scripts/lua/include/user.lua)
  KEYS[2] canceled  ncancel:{pN}:<notification>
  ARGV[1] types    the channel's subscription types, space-separated
  ARGV[2] limited  '1' for a retry or by subscription id: only the subscriptions listed after it; '0' for all
  ARGV[3] allTags  '1' for a notification with personal texts: every tag is returned too
  ARGV[4], ARGV[5], ...  only  fields of the subscriptions the job is limited to

  Returns {language, subs, timezone, tags, canceled, consent}: the stored `language` tag (nil when
  unset), the JSON of each subscription kept, in no particular order, the stored `timezone` tag
  (nil when unset), with allTags every tag as a flat field, value list (nil without), 1 when the
  notification is canceled (else 0), and the stored consent of the channel's types as a flat
  type, JSON list.
]]
-- #include user
-- #include recipient

local only = nil
if ARGV[2] == '1' then
  only = {}
  for i = 4, #ARGV do only[ARGV[i]] = true end
end
return recipient(KEYS[1], KEYS[2], channelTypes(ARGV[1]), only, ARGV[3] == '1')
