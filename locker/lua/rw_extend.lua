-- rw_extend.lua: set one read or write hold to expire ttl from now.
--
-- KEYS[1]  lock hash       <prefix>{<name>}:rw
-- KEYS[2]  wake channel    <prefix>{<name>}:wake (SPUBLISH, same slot)
-- ARGV[1]  owner token
-- ARGV[2]  hold field      'r:<hold id>' or 'w:<hold id>'
-- ARGV[3]  ttl in milliseconds
--
-- Reply: 1 extended (the key lives as long as its latest live field);
--        0 this hold is gone (expired); -1 this hold is gone and another
--        owner excludes it (as in rw_release); nothing changed then.

-- @include rw_prelude.lua

local owner, hold, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local h = live[hold]
if h and h[2] == owner then
  put(hold, now + ttl, owner)
  finish(KEYS[2])
  return 1
end
local status = stale(owner, hold)
finish(KEYS[2])
return status
