-- sem_acquire.lua: grant permits of a semaphore as one hold, or refuse.
--
-- KEYS[1]  semaphore hash  <prefix>{<name>}:sem
-- KEYS[2]  expiries        <prefix>{<name>}:semz
-- ARGV[1]  call id: the hold is 'h:<call id>', its owner token the id
-- ARGV[2]  ttl in milliseconds
-- ARGV[3]  permits asked for
-- ARGV[4]  the caller's permit limit (used unless SetPermits stored one)
-- ARGV[5]  wake channel    <prefix>{<name>}:wake (a channel, not a key);
--          a waiter is woken on "<wake>:<waiter id>"
-- ARGV[6]  waiter id of an Acquire (absent or '' for TryAcquire): a
--          refused call enters it among the waiters, or refreshes its
--          entry, for ARGV[7] ms; a grant removes it
-- ARGV[7]  ms a waiter's entry lives (absent when no waiter)
-- ARGV[8]  '1': the semaphore is FIFO (only the oldest waiter is granted;
--          a call without a waiter id is refused while anyone waits)
-- ARGV[9]  ms after which a waiter that entered starves (absent or '':
--          never): from then on, until it is granted or leaves, the
--          permits it asks for are kept for it while it is the oldest
--
-- Reply: {1, fence} granted: the hold lives ttl from now and the fence is
--        above every earlier grant's of this name (max(last + 1, server
--        µs)); a re-sent call gets its hold's fence and keeps the later
--        expiry.
--        {0, pttl} refused: not enough permits are free (or they are kept
--        for a waiter that waited too long, see sem_prelude.lua; or, FIFO,
--        another waiter is ahead); pttl is the time to the next expiry, in
--        ms, capped at a third of ARGV[7] for a waiter, so it refreshes
--        its entry in time.
--        {0, 0} refused: the call was abandoned (see sem_cancel.lua).
--        {-2, limit} refused for good: more permits asked for than the
--        limit (the waiter, if any, is removed).
--
-- The fast path: with no hash and no expiries (nothing held, nobody
-- waits, no stored limit, no abandoned call), a grant needs only EXISTS,
-- TIME, HSET, ZADD and two PEXPIREs.
local n, cfg = tonumber(ARGV[3]), tonumber(ARGV[4])
if redis.call('EXISTS', KEYS[1], KEYS[2]) == 0 and n <= cfg then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local fence = t[1] .. string.format('%06d', t[2])
  local exp = now + tonumber(ARGV[2])
  redis.call('HSET', KEYS[1], 'f', fence, 'p', ARGV[3], 'm', ARGV[4], 'h:' .. ARGV[1], exp .. ':' .. ARGV[3] .. ':0:' .. fence)
  redis.call('ZADD', KEYS[2], exp, 'h:' .. ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return {1, tonumber(fence)}
end

-- After the fast path, which so creates none of its functions:
-- @include sem_prelude.lua

local id, ttl = ARGV[1], tonumber(ARGV[2])
local waiter, qttl, fifo = ARGV[6] or '', tonumber(ARGV[7]) or 0, ARGV[8] == '1'
local starve = tonumber(ARGV[9])
local hk = 'h:' .. id
local xh = redis.call('HMGET', H, 'x:' .. id, hk)
if xh[1] then
  finish(ARGV[5])
  return {0, 0} -- an abandoned call arriving late
end
local h = parseHold(xh[2])
if h then
  h[1] = math.max(h[1], now + ttl) -- a re-sent call
  putHold(hk, h)
  finish(ARGV[5])
  return {1, h[4]}
end
if tonumber(st[4]) ~= cfg then
  redis.call('HSET', H, 'm', cfg)
end
local lim = tonumber(st[3]) or cfg
limit = lim
if n > lim then
  if waiter ~= '' then
    leave(waiter)
  end
  finish(ARGV[5])
  return {-2, lim}
end
local blocked = held + n > lim
if not blocked then
  -- the oldest waiter goes first in FIFO, and once it starves
  local first = waiters(0, 1)[1]
  if first and first[1] ~= waiter then
    if fifo then
      blocked = true
    elseif first[4] then
      blocked = held + n + first[2] > lim
    end
  end
end
if blocked then
  if waiter ~= '' then
    enter(waiter, n, qttl, fifo, starve)
  end
  local next = redis.call('ZRANGEBYSCORE', Z, '(0', '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  local wait = math.max(1, (tonumber(next[2]) or now + 1) - now)
  if waiter ~= '' then
    wait = math.min(wait, math.max(1, math.floor(qttl / 3)))
  end
  finish(ARGV[5])
  return {0, wait}
end
fence = math.max((fence or 0) + 1, micros)
local f = string.format('%d', fence)
redis.call('HSET', H, 'f', f, hk, string.format('%d:%d:0:', now + ttl, n) .. f)
redis.call('ZADD', Z, now + ttl, hk)
held = held + n
if waiter ~= '' then
  leave(waiter)
end
finish(ARGV[5])
return {1, fence}
