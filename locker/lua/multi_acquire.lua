-- multi_acquire.lua: grant several mutexes of one Cluster slot to one call,
-- all or none. Each grant is what acquire.lua makes for a plain Mutex (the
-- call id as owner and hold), so Mutex, release.lua, extend.lua,
-- pttl.lua, abandon.lua and Inspect work on each name as on any mutex.
--
-- KEYS[1]  lock hash       <prefix>{<name>} of the first name
-- KEYS[2]  waiter queue    <prefix>{<name>}:q of the first name
-- KEYS[3]  waiter expiries <prefix>{<name>}:qx of the first name
-- KEYS[4]  abandoned calls <prefix>{<name>}:x of the first name
-- KEYS[5..] the same four keys for each further name, in that order (as
--          in acquire.lua)
-- ARGV[1]  call id: the owner token and the hold 'h:<call id>' of every
--          name granted
-- ARGV[2]  ttl in milliseconds
-- ARGV[3]  1: the caller waited before (a grant marks every name as waited
--          for, so its release wakes the others); '': a first try
--
-- Reply: {1, fence} every name granted (or, for a re-sent call, found
--        granted to it), with one fence: the server time in µs, above every
--        earlier grant's of each of them.
--        {0, pttl} none granted: a name is held by another owner (pttl: the
--        longest remaining time of those holders, in ms; each is marked as
--        waited for, so its release publishes) or has a live FIFO waiter
--        queued (pttl 0): the first live one, past any whose entry
--        expired (crashed), as a Mutex sees it (queueHead in
--        mutex_prelude.lua; the expired entries are left for acquire.lua
--        to drop, with the wake-up of the live head that goes with it).
--        {0, 0} none granted: the call was abandoned on some name (see
--        abandon.lua).

-- @include mutex_prelude.lua

local id, ttl = ARGV[1], tonumber(ARGV[2])
local n = #KEYS / 4
local now, micros = serverTime()
local wait, blocked, mine = 0, false, 0
for i = 0, n - 1 do
  local lock, q, qx, x = KEYS[4 * i + 1], KEYS[4 * i + 2], KEYS[4 * i + 3], KEYS[4 * i + 4]
  if abandoned(x, id) then
    return {0, 0} -- an abandoned call arriving late
  end
  local owner = redis.call('HGET', lock, 'owner')
  if owner == id then
    mine = mine + 1 -- a re-sent call
  elseif owner then
    blocked = true
    wait = math.max(wait, redis.call('PTTL', lock))
    redis.call('HSETNX', lock, 'w', '1') -- keeps starving waiters (mutex_prelude.lua)
  elseif queueHead(q, qx, now, false) then
    blocked = true -- a live FIFO waiter goes first (expired ones are skipped, as acquire.lua does)
  end
end
if blocked then
  return {0, wait}
end
local fence = string.format('%d', micros)
if mine == n then
  fence = redis.call('HGET', KEYS[1], 'fence')
end
for i = 0, n - 1 do
  local lock = KEYS[4 * i + 1]
  if redis.call('HGET', lock, 'owner') ~= id then
    redis.call('HSET', lock, 'owner', id, 'fence', fence, 'h:' .. id, fence)
    if ARGV[3] == '1' then
      redis.call('HSET', lock, 'w', '1')
    end
  end
  if redis.call('PTTL', lock) < ttl then
    redis.call('PEXPIRE', lock, ttl)
  end
end
return {1, tonumber(fence)}
