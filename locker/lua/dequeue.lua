-- dequeue.lua: a waiter that gives up leaves the FIFO queue at once; if it
-- was first in line and the lock is free, the next waiters are woken.
--
-- KEYS[1]  waiter queue    <prefix>{<name>}:q
-- KEYS[2]  waiter expiries <prefix>{<name>}:qx
-- KEYS[3]  lock hash       <prefix>{<name>} (read only)
-- ARGV[1]  waiter id
-- ARGV[2]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--          (SPUBLISH; PUBLISH on a server without it: Redis 6.2, miniredis)
--
-- Reply: 1 the waiter was queued and is gone now, 0 it was not queued.
local first = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('HDEL', KEYS[2], ARGV[1])
if first == ARGV[1] and redis.call('EXISTS', KEYS[3]) == 0 then
  -- SPUBLISH keeps the message in the lock's shard; a server without it
  -- (Redis 6.2, miniredis) refuses it, and gets PUBLISH instead.
  local sent = redis.pcall('SPUBLISH', ARGV[2], '')
  if type(sent) == 'table' and sent.err then
    redis.call('PUBLISH', ARGV[2], '')
  end
end
return 1
