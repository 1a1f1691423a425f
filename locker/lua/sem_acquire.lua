-- sem_acquire.lua: grant permits of a semaphore as one hold, or refuse.
--
-- KEYS[1]  semaphore hash  <prefix>{<name>}:sem
-- KEYS[2]  expiries        <prefix>{<name>}:semz
-- KEYS[3]  FIFO queue      <prefix>{<name>}:semq
-- ARGV[1]  owner token (the call id)
-- ARGV[2]  call id: the hold is 'h:<call id>'
-- ARGV[3]  ttl in milliseconds
-- ARGV[4]  permits asked for
-- ARGV[5]  the caller's permit limit (used unless SetPermits stored one)
-- ARGV[6]  waiter id of a FIFO Acquire ('' for none): the call queues it,
--          or refreshes its entry, for ARGV[7] ms
-- ARGV[7]  ms a FIFO waiter's entry lives ('' when no waiter)
-- ARGV[8]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
-- ARGV[9]  '1': a refused call marks 'w' (an Acquire that will wait)
-- ARGV[10] '1': the semaphore is FIFO (only the queue's head is granted;
--          a call without a waiter id is refused while anyone is queued)
--
-- Reply: {1, fence} granted: the hold lives ttl from now and the fence is
--        above every earlier grant's of this name (max(last + 1, server
--        µs)); a re-sent call gets its hold's fence and keeps the later
--        expiry.
--        {0, pttl} refused: not enough permits are free (or, FIFO, another
--        waiter is ahead); pttl is the time to the next expiry, in ms,
--        capped at a third of ARGV[7] for a waiter, so it refreshes its
--        entry in time.
--        {0, 0} refused: the call was abandoned (see sem_cancel.lua).
--        {-2, limit} refused for good: more permits asked for than the
--        limit.

-- @include sem_prelude.lua

local owner, id, ttl, n = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local cfg, waiter, qttl = tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7]) or 0
local hk = 'h:' .. id
if redis.call('HEXISTS', H, 'x:' .. id) == 1 then
  finish(ARGV[8])
  return {0, 0} -- an abandoned call arriving late
end
local h = hold(hk)
if h and h[5] == owner then
  h[1] = math.max(h[1], now + ttl) -- a re-sent call
  putHold(hk, h)
  finish(ARGV[8])
  return {1, h[4]}
end
if tonumber(st[4]) ~= cfg then
  redis.call('HSET', H, 'm', cfg)
end
local lim = tonumber(st[3]) or cfg
limit = lim
if n > lim then
  finish(ARGV[8])
  return {-2, lim}
end
if waiter ~= '' then
  redis.call('ZADD', Q, 'NX', micros, waiter)
  redis.call('HSET', H, 'q:' .. waiter, string.format('%d:%d', now + qttl, n))
  redis.call('ZADD', Z, now + qttl, 'q:' .. waiter)
end
local blocked = held + n > lim
if not blocked and ARGV[10] == '1' then
  local first = head()
  blocked = first ~= '' and first ~= waiter
end
if blocked then
  if ARGV[9] == '1' then
    redis.call('HSET', H, 'w', '1')
  end
  local next = redis.call('ZRANGEBYSCORE', Z, '(0', '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  local wait = math.max(1, (tonumber(next[2]) or now + 1) - now)
  if waiter ~= '' then
    wait = math.min(wait, math.max(1, math.floor(qttl / 3)))
  end
  finish(ARGV[8])
  return {0, wait}
end
fence = math.max((fence or 0) + 1, micros)
redis.call('HSET', H, 'f', string.format('%d', fence))
putHold(hk, {now + ttl, n, 0, fence, owner})
redis.call('HINCRBY', H, 'p', n)
held = held + n
if waiter ~= '' then
  redis.call('HDEL', H, 'q:' .. waiter)
  redis.call('ZREM', Z, 'q:' .. waiter)
  redis.call('ZREM', Q, waiter)
  moved = true
end
finish(ARGV[8])
return {1, fence}
