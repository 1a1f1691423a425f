-- rw_extend.lua: set one read or write hold to expire ttl from now.
--
-- KEYS[1]  lock hash       <prefix>{<name>}:rw
-- KEYS[2]  read expiries   <prefix>{<name>}:rwr
-- ARGV[1]  owner token
-- ARGV[2]  hold field      'r:<call id>' or 'w:<call id>'
-- ARGV[3]  ttl in milliseconds
-- ARGV[4]  extend number: increases with every extend of one lease; an
--          extend that arrives after a later one of the same lease was
--          applied is refused, so a late call never shortens the hold
-- ARGV[5]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--
-- Reply: 1 extended (the key lives as long as its latest live field);
--        0 this hold is gone (expired); -1 this hold is gone and another
--        owner excludes it (as in rw_release); 2 refused: a later extend of
--        this lease was applied already. Nothing changed unless 1.

local want = {ARGV[2]}
-- @include rw_prelude.lua

local owner, hold, ttl, n = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local h = get(hold)
if h and h[2] == owner then
  if h[4] > n then
    finish(ARGV[5])
    return 2
  end
  put(hold, now + ttl, owner, h[3], n)
  finish(ARGV[5])
  return 1
end
local status = stale(owner, hold)
finish(ARGV[5])
return status
