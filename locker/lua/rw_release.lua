-- rw_release.lua: drop one read or write hold of the read-write lock.
--
-- KEYS[1]  lock hash       <prefix>{<name>}:rw
-- KEYS[2]  read expiries   <prefix>{<name>}:rwr
-- ARGV[1]  owner token
-- ARGV[2]  hold field      'r:<call id>' or 'w:<call id>'
-- ARGV[3]  1: also drop the owner's holds of the same kind granted before
--          this one (a caller-chosen Owner that is not reentrant: a
--          hand-over's Unlock frees the lock); '': only this hold
-- ARGV[4]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--
-- Reply: 1 released; 0 this hold is gone (expired, or a re-sent call) and
--        no other owner excludes it; -1 this hold is gone and another owner
--        holds the write lock (or, for a write hold, a read hold); nothing
--        but expired fields was changed then. A release that arrives late
--        never drops a hold granted after its own. Publishes on the wake
--        channel when the call freed capacity.

local want = {ARGV[2]}
-- @include rw_prelude.lua

local owner, hold = ARGV[1], ARGV[2]
local h = get(hold)
if h and h[2] == owner then
  if ARGV[3] == '1' then
    for _, k in ipairs(earlier(owner, hold, h[3])) do
      drop(k)
    end
  end
  drop(hold)
  finish(ARGV[4])
  return 1
end
local status = stale(owner, hold)
finish(ARGV[4])
return status
