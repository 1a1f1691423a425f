-- pttl.lua: the remaining time to live of a lock, if the caller still holds it.
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- ARGV[1]  owner token
-- ARGV[2]  hold id
--
-- Reply: {1, pttl} held by this hold, pttl in milliseconds;
--        {0, 0} nobody holds the lock or this hold is gone (expired);
--        {-1, 0} another owner holds the lock.
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then
  return {0, 0}
end
if owner ~= ARGV[1] then
  return {-1, 0}
end
if redis.call('HEXISTS', KEYS[1], 'h:' .. ARGV[2]) == 0 then
  return {0, 0}
end
return {1, redis.call('PTTL', KEYS[1])}
