-- extend.lua: push back the expiry of a held lock.
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- ARGV[1]  owner token
-- ARGV[2]  hold id
-- ARGV[3]  ttl in milliseconds
-- ARGV[4]  extend number: increases with every extend of one lease; an
--          extend that arrives after a later one of the same lease was
--          applied is refused, so a late call never shortens the lock
--
-- Reply: 1 extended: the lock lives ttl from now (never less than before
--        while other holds of the same owner remain), 0 nobody holds the lock
--        or this hold is gone (expired), -1 another owner holds the lock,
--        2 refused: a later extend of this lease was applied already.
local hold = 'h:' .. ARGV[2]
local f = redis.call('HMGET', KEYS[1], 'owner', hold, 'w')
if not f[1] then
  return 0
end
if f[1] ~= ARGV[1] then
  return -1
end
local v = f[2]
if not v then
  return 0
end
local order, seen = string.match(v, '^(%d+):?(%d*)$')
local n = tonumber(ARGV[4])
if seen ~= '' and tonumber(seen) > n then
  return 2
end
redis.call('HSET', KEYS[1], hold, order .. ':' .. ARGV[4])
local ttl = tonumber(ARGV[3])
-- fields: owner, fence, the holds, and 'w' while someone may wait
local others = redis.call('HLEN', KEYS[1]) - 3
if f[3] then
  others = others - 1
end
if others <= 0 or redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
