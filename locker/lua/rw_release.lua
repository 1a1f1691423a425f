-- rw_release.lua: drop one read or write hold of the read-write lock.
--
-- KEYS[1]  lock hash       <prefix>{<name>}:rw
-- KEYS[2]  wake channel    <prefix>{<name>}:wake (SPUBLISH, same slot)
-- ARGV[1]  owner token
-- ARGV[2]  hold field      'r:<hold id>' or 'w:<hold id>'
--
-- Reply: 1 released; 0 this hold is gone (expired, or a re-sent call) and
--        no other owner excludes it; -1 this hold is gone and another owner
--        holds the write lock (or, for a write hold, a read hold); nothing
--        but expired fields was changed then. Publishes on the wake channel
--        when the call freed capacity.

-- @include rw_prelude.lua

local owner, hold = ARGV[1], ARGV[2]
local h = live[hold]
if h and h[2] == owner then
  drop(hold)
  finish(KEYS[2])
  return 1
end
local status = stale(owner, hold)
finish(KEYS[2])
return status
