-- sem_prelude.lua: the shared start of every sem_*.lua script, inserted
-- where a script says "-- @include sem_prelude.lua" (script.go does it when
-- it embeds the scripts; the SHA is that of the assembled source).
--
-- KEYS[1]  semaphore hash  <prefix>{<name>}:sem
-- KEYS[2]  expiries        <prefix>{<name>}:semz (a sorted set)
-- KEYS[3]  FIFO queue      <prefix>{<name>}:semq (a sorted set)
--
-- Reply: none of its own; it defines now (server time in ms), micros
-- (server time in µs), fence (the last grant's), held (permits held),
-- limit (the permit limit SetPermits stored, else the last one an acquire
-- passed), kept (a limit is stored: the keys do not expire), freed and
-- moved (flags: permits were freed, the queue's head
-- may have changed), and the helpers hold, putHold, dropHold, head and
-- finish.
--
-- Hash fields: 'f' the last grant's fence; 'p' the permits of the holds
-- stored; 'n' the limit set by SetPermits (for every client, until
-- cleared); 'm' the limit the last acquire passed; 'w' a refused Acquire
-- waits (a release publishes once for it); 'h:<id>' a hold, "<expiry
-- ms>:<permits>:<extend n>:<fence>:<owner>"; 'x:<id>' an abandoned acquire
-- call (an acquire or a SetPermits), refused until its expiry;
-- 'q:<waiter>' a FIFO waiter's entry, "<expiry ms>:<permits>"; 'u' the
-- undo record of the last SetPermits that changed 'n', "<call id>:<the
-- limit before, or ''>" (see sem_permits.lua). Every 'h:', 'x:' and 'q:'
-- field, and 'u', is scored by its expiry in KEYS[2], and every waiter by its arrival (server µs) in
-- KEYS[3]; both sets also hold the member '' scored 0, so they exist as
-- long as the hash (a slot being migrated answers a script whose keys are
-- partly missing with TRYAGAIN). Expired fields are found by score and
-- deleted once: no call scans the holders.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local micros = tonumber(t[1]) * 1000000 + tonumber(t[2])
local H, Z, Q = KEYS[1], KEYS[2], KEYS[3]
local freed, moved = false, false

-- Purge what has expired, a bounded batch at a time.
while true do
  local gone = redis.call('ZRANGEBYSCORE', Z, 1, now, 'LIMIT', 0, 500)
  if #gone == 0 then
    break
  end
  local vals, n, qs = redis.call('HMGET', H, unpack(gone)), 0, {}
  for j, k in ipairs(gone) do
    local kind = string.sub(k, 1, 2)
    if kind == 'h:' and vals[j] then
      n = n + (tonumber(string.match(vals[j], '^%d+:(%d+):')) or 0)
    elseif kind == 'q:' then
      qs[#qs + 1] = string.sub(k, 3)
    end
  end
  redis.call('HDEL', H, unpack(gone))
  redis.call('ZREM', Z, unpack(gone))
  if #qs > 0 then
    redis.call('ZREM', Q, unpack(qs))
    moved = true
  end
  if n > 0 then
    redis.call('HINCRBY', H, 'p', -n)
    freed = true
  end
end
local st = redis.call('HMGET', H, 'f', 'p', 'n', 'm', 'w')
local fence, held = tonumber(st[1]), tonumber(st[2]) or 0
local limit = tonumber(st[3]) or tonumber(st[4])
local kept = st[3] ~= false -- a limit stored by SetPermits: the keys do not expire

-- hold returns the live hold stored as field k, {expiry, permits, extend
-- n, fence, owner}, or nil.
local function hold(k)
  local exp, p, n, f, owner = string.match(redis.call('HGET', H, k) or '', '^(%d+):(%d+):(%d+):(%d+):(.*)$')
  exp = tonumber(exp)
  local h
  if exp and exp > now then
    h = {exp, tonumber(p), tonumber(n), tonumber(f), owner}
  end
  return h
end

-- putHold stores hold h as field k.
local function putHold(k, h)
  redis.call('HSET', H, k, string.format('%d:%d:%d:%d:', h[1], h[2], h[3], h[4]) .. h[5])
  redis.call('ZADD', Z, h[1], k)
end

-- dropHold deletes hold h, stored as field k, and frees its permits.
local function dropHold(k, h)
  redis.call('HDEL', H, k)
  redis.call('ZREM', Z, k)
  redis.call('HINCRBY', H, 'p', -h[2])
  held = held - h[2]
  freed = true
end

-- head returns the first live FIFO waiter's id and the permits it asks
-- for, or '' and 0 when nobody is queued.
local function head()
  local ids = redis.call('ZRANGEBYSCORE', Q, '(0', '+inf', 'LIMIT', 0, 1)
  if #ids == 0 then
    return '', 0
  end
  local v = redis.call('HGET', H, 'q:' .. ids[1]) or ''
  return ids[1], tonumber(string.match(v, '^%d+:(%d+)$')) or 1
end

-- publish sends a wake-up on channel ch (SPUBLISH; PUBLISH on a server
-- without it: Redis 6.2, miniredis).
local function publish(ch)
  local sent = redis.pcall('SPUBLISH', ch, '')
  if type(sent) == 'table' and sent.err then
    redis.call('PUBLISH', ch, '')
  end
end

-- finish wakes who can use what this call freed (the FIFO queue's head on
-- its own channel "<wake>:<waiter>" when its permits are free, else, once,
-- the Acquires waiting on wake when one marked 'w'), then sets the keys to
-- expire with their latest field (no expiry while SetPermits' limit is
-- stored), or deletes them when nothing is left.
local function finish(wake)
  if freed or moved then
    local id, want = head()
    if id ~= '' then
      if limit and limit - held >= want then
        publish(wake .. ':' .. id)
      end
    elseif redis.call('HDEL', H, 'w') == 1 then
      publish(wake)
    end
  end
  local top = redis.call('ZREVRANGE', Z, 0, 0, 'WITHSCORES')
  local last = tonumber(top[2]) or 0
  if last == 0 then
    redis.call('DEL', Z, Q)
    if kept then
      redis.call('HDEL', H, 'p', 'w')
      redis.call('PERSIST', H)
    else
      redis.call('DEL', H)
    end
    return
  end
  redis.call('ZADD', Z, 0, '')
  redis.call('ZADD', Q, 0, '')
  for _, k in ipairs({H, Z, Q}) do
    if kept then
      redis.call('PERSIST', k)
    else
      redis.call('PEXPIRE', k, last - now)
    end
  end
end
