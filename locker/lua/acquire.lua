-- acquire.lua: grant the mutex to an owner, or add a hold for that owner.
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- KEYS[2]  fence counter   <prefix>{<name>}:fence (never expires)
-- ARGV[1]  owner token
-- ARGV[2]  hold id (equals the owner token for a single, non-reentrant hold)
-- ARGV[3]  ttl in milliseconds
--
-- Reply: {1, fence} when granted: a new grant takes the next fence; the same
--        owner (a re-sent call, a hand-over or a reentrant hold) gets the
--        current fence and the key lives at least ttl from now.
--        {0, pttl} when another owner holds the lock; pttl is its remaining
--        time to live in milliseconds.
--
-- The hash holds 'owner', 'fence' and one 'h:<hold id>' field per hold.
local owner = redis.call('HGET', KEYS[1], 'owner')
local ttl = tonumber(ARGV[3])
if not owner then
  local fence = redis.call('INCR', KEYS[2])
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'fence', fence, 'h:' .. ARGV[2], 1)
  redis.call('PEXPIRE', KEYS[1], ttl)
  return {1, fence}
end
if owner ~= ARGV[1] then
  return {0, redis.call('PTTL', KEYS[1])}
end
redis.call('HSET', KEYS[1], 'h:' .. ARGV[2], 1)
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return {1, tonumber(redis.call('HGET', KEYS[1], 'fence'))}
