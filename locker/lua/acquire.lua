-- acquire.lua: grant the mutex to an owner, or add a hold for that owner;
-- serve queued (FIFO) waiters first. Every call has its own id, which names
-- the hold it grants, so a clean-up of this call (abandon.lua) can drop
-- exactly what it granted and refuse it should it arrive later.
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- KEYS[2]  waiter queue    <prefix>{<name>}:q (sorted set: waiter id by arrival)
-- KEYS[3]  waiter expiries <prefix>{<name>}:qx (hash: waiter id ->
--                          "<expiry ms in server time>:<ttl ms>:<ARGV[1]>",
--                          what a release needs to hand the lock over; field
--                          '#' is the arrival counter)
-- KEYS[4]  abandoned calls <prefix>{<name>}:x (see abandon.lua)
-- ARGV[1]  owner token: a caller's chosen Owner, or '' for the call id
--          itself (an empty argument costs the client nothing to send)
-- ARGV[2]  call id: unique to this call; names the hold 'h:<call id>'
-- ARGV[3]  ttl in milliseconds
-- ARGV[4]  queue ttl in milliseconds ('' for 0): when not granted, join the queue (or
--          refresh this waiter's place in it) for that long; 0: do not queue
-- ARGV[5]  waiter id: the queue entry of one Lock call ('' when not queued)
-- ARGV[6]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--          (publish in shared_prelude.lua)
-- ARGV[7]  1: the caller waited for this lock before (it was refused
--          earlier in the same Lock call), so others may still wait: the
--          grant marks the lock as waited for; '': a first try; 2: as 1,
--          and the caller (not FIFO) has waited past its starvation
--          threshold: when not granted, it is kept as a starving waiter
--          in the lock's 'w' mark (see mutex_prelude.lua) for ARGV[4] ms
--          (or its entry refreshed, keeping its place), under waiter id
--          ARGV[5], instead of in the FIFO queue: the release of the
--          lock's last hold hands the lock to it
--
-- Reply: fence (one integer, above 0) when the fast path below granted a
--        free lock: as {1, fence}, in the cheapest reply (a table costs the
--        server a deferred length and a lookup of each special field).
--        {2, fence} when a release handed the lock to this caller's waiter
--        (see handover in mutex_prelude.lua): its hold is 'h:<waiter id>',
--        its owner ARGV[1] or, when '', the waiter id; the key lives at
--        least ttl from now.
--        {1, fence} when granted: a new grant's fence is the server time in
--        microseconds; the same owner (a re-sent call, a hand-over or a
--        reentrant hold) gets the current fence, and the key lives at least
--        ttl from now. A re-sent call finds its hold and changes nothing else.
--        {0, pttl} when not granted: pttl is the holder's remaining time to
--        live in milliseconds, 0 when the lock is free but an earlier
--        queued waiter goes first (or the call was abandoned). A waiter's
--        call (ARGV[5] set) that got past that check gets {0, pttl, µs}
--        (and {3, pttl, µs}): µs is the server time (TIME) of the refusal,
--        so that the waiter can tell a hand-over's wake-up (whose payload,
--        the fence, is the server µs of the grant) sent after this refusal
--        from a late one of an earlier grant.
--        {3, pttl} not granted, as {0, pttl}, to a caller that is not
--        starving while starving waiters are kept in the lock's mark: the
--        lock is in starvation mode, handed from one to the next, so a
--        blocking Lock starves at once (it queues behind them, as
--        sync.Mutex's newcomers do in starvation mode).
--
-- The hash holds 'owner', 'fence', one 'h:<call id>' field per hold, whose
-- value is the grant's order (server µs) and, after an extend, the lease's
-- last extend number ("<order>:<n>"), and 'w' while someone may wait for the
-- lock: a refused call sets it, and only then does a release publish a
-- wake-up (its value: '1' and the starving waiters, see ARGV[7]). While
-- the queue is not empty only its head may take a free lock; waiters
-- whose entry expired (crashed) are skipped and dropped, and the
-- next ones woken (queueHead in mutex_prelude.lua, which multi_acquire.lua
-- shares).
--
-- The fast path: with no lock, no queue and no abandoned call on the name
-- (one EXISTS over the three keys), a grant needs only TIME, HSET and
-- PEXPIRE, and replies with the bare fence. An abandoned call is looked
-- up only when the name has some.
local me = ARGV[1]
if me == '' then
  me = ARGV[2]
end
local waited = ARGV[7] == '1' or ARGV[7] == '2'
if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[4]) == 0 then
  local t = redis.call('TIME')
  local fence = t[1] .. string.sub('00000' .. t[2], -6) -- µs: 6 digits (cheaper than string.format)
  if waited then
    redis.call('HSET', KEYS[1], 'owner', me, 'fence', fence, 'h:' .. ARGV[2], fence, 'w', '1')
  else
    redis.call('HSET', KEYS[1], 'owner', me, 'fence', fence, 'h:' .. ARGV[2], fence)
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return tonumber(fence)
end

-- After the fast path, which so creates none of its functions:
-- @include mutex_prelude.lua

if abandoned(KEYS[4], ARGV[2]) then
  return {0, 0}
end
local owner = redis.call('HGET', KEYS[1], 'owner')
local ttl = tonumber(ARGV[3])
local hold = 'h:' .. ARGV[2]
local waiter = ARGV[5]

local us = nil
local function micros() -- the server's µs, read once (serverTime)
  if not us then
    local _
    _, us = serverTime()
  end
  return us
end

local function dequeue()
  if waiter ~= '' and redis.call('ZREM', KEYS[2], waiter) == 1 then
    redis.call('HDEL', KEYS[3], waiter)
  end
end

if owner and waiter ~= '' and redis.call('HEXISTS', KEYS[1], 'h:' .. waiter) == 1 then
  -- handed over by a release while this caller waited
  if redis.call('PTTL', KEYS[1]) < ttl then
    redis.call('PEXPIRE', KEYS[1], ttl)
  end
  return {2, tonumber(redis.call('HGET', KEYS[1], 'fence'))}
end

if owner == me then
  redis.call('HSETNX', KEYS[1], hold, string.format('%d', micros()))
  if redis.call('PTTL', KEYS[1]) < ttl then
    redis.call('PEXPIRE', KEYS[1], ttl)
  end
  dequeue()
  if ARGV[7] == '2' and waiter ~= '' then
    unstarve(KEYS[1], waiter)
  end
  return {1, tonumber(redis.call('HGET', KEYS[1], 'fence'))}
end

local head = nil
if redis.call('EXISTS', KEYS[2]) == 1 then
  local entry, skipped
  head, entry, skipped = queueHead(KEYS[2], KEYS[3], math.floor(micros() / 1000), true)
  if skipped and not owner and head and head ~= waiter then
    publish(ARGV[6]) -- the live head may not know the lock is free
  end
end

if not owner and (not head or head == waiter) then
  -- A new grant: the lock was free, so no fence of it is stored; the
  -- server clock in microseconds is above every earlier grant's (as long as
  -- it does not go back).
  local fence = string.format('%d', micros())
  redis.call('HSET', KEYS[1], 'owner', me, 'fence', fence, hold, fence)
  if head or waited then
    -- queued or earlier waiters may still wait: the release wakes them
    redis.call('HSET', KEYS[1], 'w', '1')
  end
  redis.call('PEXPIRE', KEYS[1], ttl)
  if head then
    dequeue()
  end
  return {1, tonumber(fence)}
end

local qttl = tonumber(ARGV[4]) or 0
if owner and ARGV[7] == '2' and qttl > 0 and waiter ~= '' then
  -- a starving waiter: keep it (or refresh its entry, in its place) in
  -- the 'w' mark, which also tells the release that someone waits
  local now = math.floor(micros() / 1000)
  local list, found = starvers(redis.call('HGET', KEYS[1], 'w')), false
  for _, e in ipairs(list) do
    if e[3] == waiter then
      e[1], e[2], e[4], found = now + qttl, ttl, ARGV[1], true
    end
  end
  if not found then
    list[#list + 1] = {now + qttl, ttl, waiter, ARGV[1]}
  end
  redis.call('HSET', KEYS[1], 'w', starveMark(list, now))
  return {0, redis.call('PTTL', KEYS[1]), micros()}
end
if qttl > 0 and waiter ~= '' and ARGV[7] ~= '2' then
  if not redis.call('ZSCORE', KEYS[2], waiter) then
    redis.call('ZADD', KEYS[2], redis.call('HINCRBY', KEYS[3], '#', 1), waiter)
  end
  redis.call('HSET', KEYS[3], waiter, string.format('%d:%d:', math.floor(micros() / 1000) + qttl, ttl) .. ARGV[1])
  redis.call('PEXPIRE', KEYS[2], 3 * qttl)
  redis.call('PEXPIRE', KEYS[3], 3 * qttl)
end
-- refuse replies {status, pttl}, with the server µs for a waiter's call
local function refuse(status, pttl)
  if waiter ~= '' then
    return {status, pttl, micros()}
  end
  return {status, pttl}
end
if owner then
  -- this caller waits: wake it on release
  local w = redis.call('HGET', KEYS[1], 'w')
  if not w then
    redis.call('HSET', KEYS[1], 'w', '1')
  elseif #w > 1 then
    -- starving waiters are kept: the lock is handed over, not barged
    -- for, so the caller had better starve at once (reply 3)
    return refuse(3, redis.call('PTTL', KEYS[1]))
  end
  return refuse(0, redis.call('PTTL', KEYS[1]))
end
return refuse(0, 0)
