-- dequeue.lua: a waiter that gives up leaves the FIFO queue, or the
-- starving waiters kept in the lock's 'w' mark, at once. If the lock was
-- handed to it meanwhile (see handover and passOn in mutex_prelude.lua)
-- and it never learned, its hold is dropped and the lock goes to the next
-- live starving waiter, if any; if it was first in line and the lock is
-- free, the lock goes to the next live waiter (or, without hand-over
-- details, the waiters are woken).
--
-- KEYS[1]  waiter queue    <prefix>{<name>}:q
-- KEYS[2]  waiter expiries <prefix>{<name>}:qx
-- KEYS[3]  lock hash       <prefix>{<name>}
-- ARGV[1]  waiter id
-- ARGV[2]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--          (publish in shared_prelude.lua)
--
-- Reply: 1 the waiter was queued or handed the lock and is gone now, 0 it
-- was neither.

-- @include mutex_prelude.lua

local first = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
local queued = redis.call('ZREM', KEYS[1], ARGV[1]) == 1
if queued then
  redis.call('HDEL', KEYS[2], ARGV[1])
end
local handed = redis.call('HDEL', KEYS[3], 'h:' .. ARGV[1]) == 1
local passed = false
if handed then
  -- fields left: owner, fence, other holds, and 'w' while someone may wait
  local n = redis.call('HLEN', KEYS[3])
  if n <= 2 then
    redis.call('DEL', KEYS[3])
  elseif n == 3 then
    local w = redis.call('HGET', KEYS[3], 'w')
    if w then
      passed = passOn(KEYS[3], w, ARGV[2], nil) == 1
      if not passed then
        redis.call('DEL', KEYS[3])
      end
    end
  end
end
if not passed then
  unstarve(KEYS[3], ARGV[1]) -- a starving waiter's entry (default mode)
end
if (handed or first == ARGV[1]) and redis.call('EXISTS', KEYS[3]) == 0 then
  if handover(KEYS[3], KEYS[1], KEYS[2], ARGV[2]) == 0 then
    publish(ARGV[2])
  end
end
if queued or handed then
  return 1
end
return 0
