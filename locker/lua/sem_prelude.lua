-- sem_prelude.lua: the shared part of every sem_*.lua script, inserted
-- where a script says "-- @include sem_prelude.lua" (script.go does it when
-- it embeds the scripts; the SHA is that of the assembled source). The
-- acquire and release scripts take their uncontended fast path before it,
-- so it runs only on their contended path.
--
-- KEYS[1]  semaphore hash  <prefix>{<name>}:sem
-- KEYS[2]  expiries        <prefix>{<name>}:semz (a sorted set)
--
-- Reply: none of its own; it defines now (server time in ms), micros
-- (server time in µs), fence (the last grant's), held (permits held),
-- limit (the permit limit SetPermits stored, else the last one an acquire
-- passed), kept (a limit is stored: the keys do not expire), freed and
-- moved (flags: permits were freed, the waiters changed), promised (the
-- permits promised to woken waiters), count (the waiters; held, promised
-- and count are stored by finish), and the helpers hold, putHold,
-- parseHold, dropHold, waiters, entry, unpromise, enter, leave and finish.
--
-- Hash fields: 'f' the last grant's fence; 'p' the permits of the holds
-- stored; 'n' the limit set by SetPermits (for every client, until
-- cleared); 'm' the limit the last acquire passed; 'k' the permits
-- promised to woken waiters and 'c' the waiters (both absent when 0);
-- 'h:<id>' a hold, "<expiry ms>:<permits>:<extend n>:<fence>" (its owner
-- token is <id>, the call id that granted it); 'x:<id>' an abandoned
-- acquire call (an acquire or a SetPermits), refused until its expiry;
-- 'q:<waiter>' a waiting Acquire's entry, "<expiry ms>:<permits>:<woken>:
-- <starving at>[:f]" (woken 1: a release woke it for permits that fit,
-- and it has not tried since; starving at: the server ms from which it
-- starves, 0 never; ':f' a FIFO semaphore's waiter); 'u' the undo record
-- of the last SetPermits that changed 'n', "<call id>:<the limit before,
-- or ''>" (see sem_permits.lua).
--
-- The sorted set scores every 'h:', 'x:' and 'q:' field, and 'u', by its
-- expiry (server ms, positive), and every waiter 'a:<waiter>' by its
-- arrival (server µs minus 1e16: negative, so the waiters come first, in
-- arrival order, and never among the expiries); it holds the member ''
-- scored 0 while a stored limit keeps the hash with nothing else to score.
-- So the sorted set exists exactly as long as the hash (a slot being
-- migrated answers a script whose keys are partly missing with TRYAGAIN).
-- Expired fields are found by score and deleted once: no call scans the
-- holders.
--
-- Waking: every waiting Acquire has its own channel "<wake>:<waiter>". A
-- call that frees permits or changes the waiters wakes, oldest first, the
-- waiters whose permits fit in those free and not already promised to a
-- woken waiter (looking at the 16 oldest at most; the others retry on
-- their own): one wake-up per freed permit, never a herd. A woken waiter
-- that tries (granted or not), leaves, or expires (crashed) gives its
-- promise back, and the call that sees it wakes the next waiter that fits:
-- the wake-up is handed on, never lost. FIFO wakes only the oldest waiter.
-- Starvation: once the oldest waiter starves (it has waited its Acquire's
-- starvation threshold), no other caller may take the permits it needs
-- (they are kept for it, and it is woken when they are free), so a waiter
-- is overtaken by barging acquirers for at most that long.
local ARRIVAL = 1e16
-- serverTime and publish:
-- @include shared_prelude.lua
local now, micros = serverTime()
local H, Z = KEYS[1], KEYS[2]
local freed, moved = false, false
local gone_p, gone_w, gave = 0, 0, 0 -- expired: held permits, waiters, permits promised to them

-- Purge what has expired (purgeExpired): an expired hold frees its
-- permits, an expired waiter leaves (its arrival member too) and gives
-- back what was promised to it.
local as = {}
purgeExpired(H, Z, now, function(k, v)
  local kind = string.sub(k, 1, 2)
  if kind == 'h:' and v then
    gone_p = gone_p + (tonumber((string.match(v, '^%d+:(%d+):'))) or 0)
    freed = true
  elseif kind == 'q:' and v then
    as[#as + 1] = 'a:' .. string.sub(k, 3)
    gave = gave + (tonumber((string.match(v, '^%d+:(%d+):1'))) or 0)
  end
end, function()
  if #as > 0 then
    redis.call('ZREM', Z, unpack(as))
    gone_w = gone_w + #as
    moved = true
    as = {}
  end
end)
local st = redis.call('HMGET', H, 'f', 'p', 'n', 'm', 'k', 'c')
local fence, held0 = tonumber(st[1]), tonumber(st[2])
local held = math.max(0, (held0 or 0) - gone_p)
local promised0, count0 = tonumber(st[5]) or 0, tonumber(st[6]) or 0
local promised = math.max(0, promised0 - gave)
local count = math.max(0, count0 - gone_w) -- waiters
local limit = tonumber(st[3]) or tonumber(st[4])
local kept = st[3] ~= false -- a limit stored by SetPermits: the keys do not expire

-- parseHold returns the live hold whose field's value is v (nil or
-- false: none), {expiry, permits, extend n, fence}, or nil.
local function parseHold(v)
  local exp, p, n, f = string.match(v or '', '^(%d+):(%d+):(%d+):(%d+)')
  exp = tonumber(exp)
  local h
  if exp and exp > now then
    h = {exp, tonumber(p), tonumber(n), tonumber(f)}
  end
  return h
end

-- hold returns the live hold stored as field k, or nil (see parseHold).
local function hold(k)
  return parseHold(redis.call('HGET', H, k))
end

-- putHold stores hold h as field k.
local function putHold(k, h)
  redis.call('HSET', H, k, string.format('%d:%d:%d:%d', h[1], h[2], h[3], h[4]))
  redis.call('ZADD', Z, h[1], k)
end

-- dropHold deletes hold h, stored as field k, and frees its permits.
local function dropHold(k, h)
  redis.call('HDEL', H, k)
  redis.call('ZREM', Z, k)
  held = held - h[2]
  freed = true
end

-- waiters returns up to max waiters from the off-th oldest on, each {id,
-- permits, woken, starving (a bool), fifo, expiry ms, starving at}.
local function waiters(off, max)
  if count == 0 then
    return {}
  end
  local ids = redis.call('ZRANGEBYSCORE', Z, '-inf', '(0', 'LIMIT', off, max)
  local out = {}
  if #ids == 0 then
    return out
  end
  for i, a in ipairs(ids) do
    ids[i] = 'q:' .. string.sub(a, 3)
  end
  local vals = redis.call('HMGET', H, unpack(ids))
  for j, v in ipairs(vals) do
    if v then
      local exp, p, w, at, f = string.match(v, '^(%d+):(%d+):(%d):(%d+)(.*)$')
      at = tonumber(at) or 0
      out[#out + 1] = {string.sub(ids[j], 3), tonumber(p) or 1, w == '1', at > 0 and now >= at, f == ':f', tonumber(exp) or 0, at}
    end
  end
  return out
end

-- entry formats a waiter's entry: its expiry, the permits it asks, woken,
-- when it starves (server ms, 0: never) and fifo (a FIFO semaphore's
-- waiter: only the oldest is woken).
local function entry(exp, n, woken, at, fifo)
  return string.format('%d:%d:%d:%d', exp, n, woken and 1 or 0, at) .. (fifo and ':f' or '')
end

-- unpromise gives back what was promised to the waiter whose entry was
-- v (nil: none): a woken waiter that tries, leaves or expires hands its
-- wake-up on (moved: the call wakes the next that fits).
local function unpromise(v)
  local p = tonumber((string.match(v or '', '^%d+:(%d+):1')))
  if p then
    promised = promised - p
    moved = true
  end
end

-- enter adds (or refreshes) waiter id, asking n permits, for qttl ms; it
-- starves starve ms after it entered (nil: never). A waiter keeps its
-- arrival.
local function enter(id, n, qttl, fifo, starve)
  local old = redis.call('HGET', H, 'q:' .. id)
  local at = tonumber((string.match(old or '', '^%d+:%d+:%d:(%d+)')))
  if at then
    unpromise(old)
  else
    at = starve and now + starve or 0
    redis.call('ZADD', Z, string.format('%d', micros - ARRIVAL), 'a:' .. id)
    count = count + 1
  end
  redis.call('HSET', H, 'q:' .. id, entry(now + qttl, n, false, at, fifo))
  redis.call('ZADD', Z, now + qttl, 'q:' .. id)
end

-- leave removes waiter id, if it waits.
local function leave(id)
  local v = redis.call('HGET', H, 'q:' .. id)
  if v then
    unpromise(v)
    redis.call('HDEL', H, 'q:' .. id)
    redis.call('ZREM', Z, 'q:' .. id, 'a:' .. id)
    count = count - 1
    moved = true
  end
end


-- wakeFit wakes the waiters that can use the free permits not yet
-- promised (see the top of this file), oldest first, looking at 16 at
-- most; a FIFO semaphore's only the oldest.
local function wakeFit(wake)
  if not limit then
    return
  end
  local budget = limit - held - promised
  local off = 0
  while budget > 0 and off < 16 do
    local ws = waiters(off, 4)
    for i, w in ipairs(ws) do
      if off == 0 and i == 1 and not w[3] and w[2] > budget and (w[5] or w[4]) then
        return -- the permits are kept for the oldest waiter (FIFO, or starving)
      end
      if not w[3] and w[2] <= budget then
        local id = w[1]
        budget, promised = budget - w[2], promised + w[2]
        redis.call('HSET', H, 'q:' .. id, entry(w[6], w[2], true, w[7], w[5]))
        publish(wake .. ':' .. id)
      end
      if w[5] then
        return -- FIFO: only the oldest
      end
    end
    if #ws < 4 then
      return
    end
    off = off + 4
  end
end

-- finish wakes who can use what this call freed (wakeFit) and stores
-- the permits promised, then sets the keys to expire with their latest
-- field (no expiry while SetPermits' limit is stored), or deletes them
-- when nothing is left.
local function finish(wake)
  if freed or moved then
    wakeFit(wake)
  end
  -- the counters, written once: 'k' and 'c' only while not 0
  local set, del = {}, {}
  if held ~= held0 then
    set[#set + 1], set[#set + 2] = 'p', held
  end
  for _, kv in ipairs({{'k', promised, promised0}, {'c', count, count0}}) do
    if kv[2] ~= kv[3] then
      if kv[2] > 0 then
        set[#set + 1], set[#set + 2] = kv[1], kv[2]
      else
        del[#del + 1] = kv[1]
      end
    end
  end
  if #set > 0 then
    redis.call('HSET', H, unpack(set))
  end
  if #del > 0 then
    redis.call('HDEL', H, unpack(del))
  end
  local top = redis.call('ZREVRANGE', Z, 0, 0, 'WITHSCORES')
  local last = tonumber(top[2]) or 0
  if last <= 0 then
    if kept then
      if top[1] ~= '' then
        redis.call('DEL', Z)
        redis.call('ZADD', Z, 0, '')
      end
      redis.call('HDEL', H, 'p')
      redis.call('PERSIST', H)
    else
      redis.call('DEL', H, Z)
    end
    return
  end
  if kept then
    redis.call('PERSIST', H)
    redis.call('PERSIST', Z)
  else
    redis.call('PEXPIRE', H, last - now)
    redis.call('PEXPIRE', Z, last - now)
  end
end
