-- acquire.lua: grant the mutex to an owner, or add a hold for that owner;
-- serve queued (FIFO) waiters first.
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- KEYS[2]  fence counter   <prefix>{<name>}:fence (never expires)
-- KEYS[3]  waiter queue    <prefix>{<name>}:q (sorted set: hold id by arrival)
-- KEYS[4]  waiter expiries <prefix>{<name>}:qx (hash: hold id -> expiry ms
--                          in server time; field '#' is the arrival counter)
-- KEYS[5]  wake channel    <prefix>{<name>}:wake
-- KEYS[6]  abandoned calls <prefix>{<name>}:x (see abandon.lua)
-- ARGV[1]  owner token
-- ARGV[2]  hold id (equals the owner token for a single, non-reentrant hold)
-- ARGV[3]  ttl in milliseconds
-- ARGV[4]  queue ttl in milliseconds: when not granted, join the queue (or
--          refresh this hold's place in it) for that long; 0: do not queue
-- ARGV[5]  call id: unique to this call; a call abandoned by its caller
--          (listed in KEYS[6]) changes nothing and is refused
--
-- Reply: {1, fence} when granted: a new grant takes the next fence (the
--        larger of the last fence + 1 and the server time in microseconds); the same
--        owner (a re-sent call, a hand-over or a reentrant hold) gets the
--        current fence and the key lives at least ttl from now.
--        {0, pttl} when not granted: pttl is the holder's remaining time to
--        live in milliseconds, 0 when the lock is free but an earlier
--        queued waiter goes first (or the call was abandoned).
--
-- The hash holds 'owner', 'fence' and one 'h:<hold id>' field per hold.
-- While the queue is not empty only its head may take a free lock; waiters
-- whose entry expired (crashed) are skipped, and the next ones woken.
if redis.call('ZSCORE', KEYS[6], ARGV[5]) then
  return {0, 0}
end
local owner = redis.call('HGET', KEYS[1], 'owner')
local ttl = tonumber(ARGV[3])
local hold = ARGV[2]

local function dequeue()
  if redis.call('ZREM', KEYS[3], hold) == 1 then
    redis.call('HDEL', KEYS[4], hold)
  end
end

if owner == ARGV[1] then
  redis.call('HSET', KEYS[1], 'h:' .. hold, 1)
  if redis.call('PTTL', KEYS[1]) < ttl then
    redis.call('PEXPIRE', KEYS[1], ttl)
  end
  dequeue()
  return {1, tonumber(redis.call('HGET', KEYS[1], 'fence'))}
end

local now = nil
local function clock()
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return now
end

local head = nil
if redis.call('EXISTS', KEYS[3]) == 1 then
  local skipped = false
  while true do
    local h = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
    if not h then
      break
    end
    if tonumber(redis.call('HGET', KEYS[4], h) or '0') > clock() then
      head = h
      break
    end
    redis.call('ZREM', KEYS[3], h)
    redis.call('HDEL', KEYS[4], h)
    skipped = true
  end
  if skipped and not owner and head and head ~= hold then
    redis.call('SPUBLISH', KEYS[5], '')
  end
end

if not owner and (not head or head == hold) then
  -- The next fence: above the last one, and at least the server's clock in
  -- microseconds, so fences keep increasing even when the counter is lost
  -- with a restart (as long as the server clock does not go back).
  local t = redis.call('TIME')
  local fence = math.max(tonumber(redis.call('GET', KEYS[2]) or '0') + 1,
    tonumber(t[1]) * 1000000 + tonumber(t[2]))
  redis.call('SET', KEYS[2], string.format('%d', fence))
  redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'fence', fence, 'h:' .. hold, 1)
  redis.call('PEXPIRE', KEYS[1], ttl)
  if head then
    dequeue()
  end
  return {1, fence}
end

local qttl = tonumber(ARGV[4])
if qttl > 0 then
  if not redis.call('ZSCORE', KEYS[3], hold) then
    redis.call('ZADD', KEYS[3], redis.call('HINCRBY', KEYS[4], '#', 1), hold)
  end
  redis.call('HSET', KEYS[4], hold, clock() + qttl)
  redis.call('PEXPIRE', KEYS[3], 3 * qttl)
  redis.call('PEXPIRE', KEYS[4], 3 * qttl)
end
if owner then
  return {0, redis.call('PTTL', KEYS[1])}
end
return {0, 0}
