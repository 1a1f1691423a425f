-- dequeue.lua: a waiter that gives up leaves the FIFO queue at once; if it
-- was first in line and the lock is free, the next waiters are woken.
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- KEYS[2]  waiter queue    <prefix>{<name>}:q
-- KEYS[3]  waiter expiries <prefix>{<name>}:qx
-- KEYS[4]  wake channel    <prefix>{<name>}:wake
-- ARGV[1]  hold id
--
-- Reply: 1 the waiter was queued and is gone now, 0 it was not queued.
local first = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then
  return 0
end
redis.call('HDEL', KEYS[3], ARGV[1])
if first == ARGV[1] and redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SPUBLISH', KEYS[4], '')
end
return 1
