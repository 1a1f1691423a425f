-- sem_cancel.lua: the clean-up of a semaphore acquire or SetPermits call
-- whose outcome is unknown to its caller, or of a waiting Acquire that
-- gives up: drop the hold that call may have granted (only that call's, named by
-- its id), undo the limit it may have stored (while no later SetPermits
-- replaced it: see sem_permits.lua), remove the waiter, and
-- refuse the call should it still arrive. A waiter that leaves hands a
-- wake-up it was given on to the next waiter that fits.
--
-- KEYS[1]  semaphore hash  <prefix>{<name>}:sem
-- KEYS[2]  expiries        <prefix>{<name>}:semz
-- ARGV[1]  owner token of the call ('' for none)
-- ARGV[2]  call id ('' for none)
-- ARGV[3]  ms to refuse the call ARGV[2] should it arrive; 0: do not
-- ARGV[4]  waiter id to remove from the waiters ('' for none)
-- ARGV[5]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--
-- Reply: 1, always. Wakes who can use what it freed (or a limit it
-- raised back).

-- @include sem_prelude.lua

local owner, id, refuse, waiter = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
if id ~= '' then
  local h = hold('h:' .. id)
  if h and id == owner then
    dropHold('h:' .. id, h)
  end
  local undo = redis.call('HGET', H, 'u')
  if undo and string.sub(undo, 1, #id + 1) == id .. ':' then
    local before = string.sub(undo, #id + 2)
    if before == '' then
      redis.call('HDEL', H, 'n')
      limit, kept = tonumber(st[4]), false
    else
      redis.call('HSET', H, 'n', before)
      limit, kept = tonumber(before), true
    end
    redis.call('HDEL', H, 'u')
    redis.call('ZREM', Z, 'u')
    freed = true
  end
  if refuse > 0 then
    redis.call('HSET', H, 'x:' .. id, string.format('%d', now + refuse))
    redis.call('ZADD', Z, now + refuse, 'x:' .. id)
  end
end
if waiter ~= '' then
  leave(waiter)
end
finish(ARGV[5])
return 1
