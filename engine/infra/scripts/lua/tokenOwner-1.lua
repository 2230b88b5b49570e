#!lua flags=no-writes
--[[
  The token index's entry of a subscription (engine/state/users/token-index.ts, claimToken-2.lua).
  KEYS[1] index  tok:{pT}
  ARGV[1] id     the subscription's id, 32 hex digits
  Returns `<registered_at>[c]:<owner>` (claimToken-2.lua), or nil when the index does not hold it.
]]
-- #include lhash

return lhashGet(lhashTable(KEYS[1]), lhashFingerprint(ARGV[1])) or false
