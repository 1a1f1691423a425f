-- release.lua: drop one hold of the owner; free the lock after the last one
-- and wake the waiters.
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- KEYS[2]  wake channel    <prefix>{<name>}:wake
-- ARGV[1]  owner token
-- ARGV[2]  hold id
--
-- Reply: 1 released (also when this hold was already dropped while other
--        holds of the owner remain), 0 nobody holds the lock (the lease
--        expired, or a re-sent call finds the last hold already released),
--        -1 another owner holds the lock (nothing was changed).
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then
  return 0
end
if owner ~= ARGV[1] then
  return -1
end
redis.call('HDEL', KEYS[1], 'h:' .. ARGV[2])
if redis.call('HLEN', KEYS[1]) <= 2 then
  redis.call('DEL', KEYS[1])
  redis.call('SPUBLISH', KEYS[2], '')
end
return 1
