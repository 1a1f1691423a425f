-- elect_proclaim.lua: record the value of the leader that holds the
-- term's lock, and tell the observers.
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- KEYS[2]  leader record   <prefix>{<name>}:leader, a hash: 'fence' (the
--          term), 'hold', 'value', 'n' (the proclaim number: 0 for the
--          value the term began with, see elect_acquire.lua); it expires
--          with the lock (see elect_extend.lua)
-- ARGV[1]  owner token
-- ARGV[2]  hold id
-- ARGV[3]  value
-- ARGV[4]  proclaim number: increases with each Proclaim of one term
-- ARGV[5]  the observers' wake channel <prefix>{<name>}:leader (a
--          channel, not a key; publish in shared_prelude.lua)
--
-- Reply: 1 recorded (or already recorded by this very call); 0 nobody
--        holds the lock or this hold is gone (the term ended); -1 another
--        owner holds it; 2 refused as late: a later Proclaim of this term
--        was recorded first. Nothing is changed unless 1.
local f = redis.call('HMGET', KEYS[1], 'owner', 'h:' .. ARGV[2], 'fence')
if not f[1] then
  return 0
end
if f[1] ~= ARGV[1] then
  return -1
end
if not f[2] then
  return 0
end
local r = redis.call('HMGET', KEYS[2], 'fence', 'n')
local n = tonumber(ARGV[4])
if r[1] == f[3] then
  if tonumber(r[2]) > n then
    return 2
  end
  if tonumber(r[2]) == n then
    return 1
  end
end
redis.call('HSET', KEYS[2], 'fence', f[3], 'hold', ARGV[2], 'value', ARGV[3], 'n', ARGV[4])
redis.call('PEXPIRE', KEYS[2], redis.call('PTTL', KEYS[1]))

-- @include shared_prelude.lua
publish(ARGV[5], f[3])
return 1
