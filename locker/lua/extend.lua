-- extend.lua: push back the expiry of a held lock.
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- ARGV[1]  owner token
-- ARGV[2]  hold id
-- ARGV[3]  ttl in milliseconds
--
-- Reply: 1 extended: the lock lives ttl from now (never less than before
--        while other holds of the same owner remain), 0 nobody holds the lock
--        or this hold is gone (expired), -1 another owner holds the lock.
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then
  return 0
end
if owner ~= ARGV[1] then
  return -1
end
if redis.call('HEXISTS', KEYS[1], 'h:' .. ARGV[2]) == 0 then
  return 0
end
local ttl = tonumber(ARGV[3])
if redis.call('HLEN', KEYS[1]) <= 3 or redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 1
