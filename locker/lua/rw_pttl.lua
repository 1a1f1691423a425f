-- rw_pttl.lua: the remaining time of one read or write hold.
--
-- KEYS[1]  lock hash       <prefix>{<name>}:rw
-- KEYS[2]  read expiries   <prefix>{<name>}:rwr
-- ARGV[1]  owner token
-- ARGV[2]  hold field      'r:<call id>' or 'w:<call id>'
-- ARGV[3]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--
-- Reply: {1, pttl} the hold lives, pttl its own remaining milliseconds;
--        {0, 0} the hold is gone (expired); {-1, 0} the hold is gone and
--        another owner excludes it (as in rw_release).

local want = {ARGV[2]}
-- @include rw_prelude.lua

local owner, hold = ARGV[1], ARGV[2]
local h = get(hold)
if h and h[2] == owner then
  finish(ARGV[3])
  return {1, h[1] - now}
end
local status = stale(owner, hold)
finish(ARGV[3])
return {status, 0}
