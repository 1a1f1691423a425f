-- elect_release.lua: end a leader's term: release.lua on the term's lock
-- (which hands it to the next candidate, if one waits), then drop the
-- leader record if it is this term's, so that no reader takes the
-- resigned leader for the current one.
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- KEYS[2]  waiter queue    <prefix>{<name>}:q
-- KEYS[3]  waiter expiries <prefix>{<name>}:qx
-- KEYS[4]  leader record   <prefix>{<name>}:leader (see elect_proclaim.lua)
-- ARGV[1]  owner token
-- ARGV[2]  hold id
-- ARGV[3]  1: also drop the owner's earlier holds (see release.lua)
-- ARGV[4]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--          (publish in shared_prelude.lua)
--
-- Reply: as release.lua's.
local function release()
-- @include release.lua
end
local r = release()
if r == 1 and redis.call('HGET', KEYS[4], 'hold') == ARGV[2] then
  redis.call('DEL', KEYS[4])
end
return r
