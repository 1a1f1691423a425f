-- elect_extend.lua: extend a leader's term: extend.lua on the term's
-- lock, then the leader record lives as long as the lock, so it never
-- outlives the term, nor the term it.
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- KEYS[2]  waiter queue    <prefix>{<name>}:q (unused: the term's keys
--          are the release's, then the record)
-- KEYS[3]  waiter expiries <prefix>{<name>}:qx (unused, as KEYS[2])
-- KEYS[4]  leader record   <prefix>{<name>}:leader (see elect_proclaim.lua)
-- ARGV[1]  owner token
-- ARGV[2]  hold id
-- ARGV[3]  ttl in milliseconds
-- ARGV[4]  extend number (see extend.lua)
--
-- Reply: as extend.lua's.
local function extend()
-- @include extend.lua
end
local r = extend()
if r == 1 and redis.call('HGET', KEYS[4], 'hold') == ARGV[2] then
  redis.call('PEXPIRE', KEYS[4], redis.call('PTTL', KEYS[1]))
end
return r
