-- mutex_prelude.lua: shared by the mutex scripts that take or free a lock
-- (acquire, multi_acquire, release, dequeue): a script says
-- "-- @include mutex_prelude.lua" (script.go does it when it embeds the
-- script). It only defines functions: including it costs no redis.call.

-- serverTime and publish:
-- @include shared_prelude.lua

-- abandoned reports whether call id is listed in x, a name's set of
-- abandoned acquire calls (<prefix>{<name>}:x, scored by the time until
-- which each is refused): such a call, arriving late, is refused.
local function abandoned(x, id)
  return redis.call('ZSCORE', x, id) ~= false
end

-- abandon lists call id in x for ttl ms from now (server ms), trimming the
-- ids whose time has passed, and keeps x at least that long.
local function abandon(x, id, now, ttl)
  redis.call('ZREMRANGEBYSCORE', x, '-inf', now)
  redis.call('ZADD', x, now + ttl, id)
  if redis.call('PTTL', x) < ttl then
    redis.call('PEXPIRE', x, ttl)
  end
end

-- queueHead returns the first live waiter of FIFO queue q and its entry in
-- qx ("<expiry ms>:<ttl ms>:<owner or ''>", see acquire.lua; an older
-- client's entry may hold the expiry only), or nil when no live waiter is
-- queued, and whether it skipped any. A waiter whose entry expired by now
-- (server ms) crashed: it is skipped, and with drop also deleted (ZREM,
-- HDEL), else left for a later call. Every queue check of the mutex
-- scripts goes through it, so a MultiLock sees the same head as a Mutex.
local function queueHead(q, qx, now, drop)
  local i, skipped, h, v = 0, false, nil, nil
  while true do
    h = redis.call('ZRANGE', q, i, i)[1]
    if not h then
      v = nil
      break
    end
    v = redis.call('HGET', qx, h) or '0'
    if (tonumber(string.match(v, '^%d+')) or 0) > now then
      break
    end
    if drop then
      redis.call('ZREM', q, h)
      redis.call('HDEL', qx, h)
    else
      i = i + 1
    end
    skipped = true
  end
  return h, v, skipped
end

-- ownChannel returns the channel that wakes waiter id: wake .. ':' ..
-- its slot, the part of the id before its first '.' (the whole id when it
-- has none), which the waiters of one client reuse one after another (see
-- slots.go).
local function ownChannel(wake, id)
  return wake .. ':' .. (string.match(id, '^([^.]*)%.') or id)
end

-- handover gives the free mutex lock to the first live waiter of FIFO
-- queue q (entries in qx: "<expiry ms>:<ttl ms>:<owner or ''>", see
-- acquire.lua), skipping and dropping expired (crashed) waiters: the lock
-- gets that waiter's owner (its waiter id when '') and one hold named by
-- the waiter id, a fresh fence (server µs) and the 'w' mark, and lives the
-- waiter's TTL, as any grant does: the waiter may take the grant from the
-- wake-up alone. The waiter leaves the queue and is woken on its own
-- channel (ownChannel), with "<fence>:<waiter id>" as the payload. It
-- returns 1 when it handed the lock over, 0 when nobody waits or the
-- head's entry has no hand-over details (written by an older client): the
-- caller then frees the lock, if it holds one, and wakes everyone on wake.
-- A lock that still exists is rewritten in place, its last hold, gone,
-- dropped: the key never stops existing (a script may not create a key of
-- a slot being migrated, and an error after a DEL would free the lock
-- behind its caller's back).
local function handover(lock, q, qx, wake, gone)
  local now, _, t = serverTime()
  local h, v = queueHead(q, qx, now, true)
  if not h then
    return 0
  end
  local _, ttl, owner = string.match(v, '^(%d+):(%d+):(.*)$')
  if not ttl then
    return 0
  end
  if owner == '' then
    owner = h
  end
  local fence = t[1] .. string.format('%06d', t[2])
  redis.call('HSET', lock, 'owner', owner, 'fence', fence, 'h:' .. h, fence, 'w', '1')
  if gone then
    redis.call('HDEL', lock, gone)
  end
  redis.call('PEXPIRE', lock, ttl)
  redis.call('ZREM', q, h)
  redis.call('HDEL', qx, h)
  publish(ownChannel(wake, h), fence .. ':' .. h)
  return 1
end

-- Starving waiters. A waiter of a mutex in the default (barging) mode that
-- has waited longer than its threshold (MutexOptions.StarvationThreshold)
-- is kept in the lock's own hash, in the 'w' mark: 'w' is '1' followed by
-- one entry per starving waiter, in arrival order, each
-- "<expiry ms>:<ttl ms>:<id length>:<owner length>:<waiter id><owner>"
-- (owner '' for the waiter id itself; the lengths let an owner hold any
-- byte). They live and die with the lock: the release of the last hold
-- hands the lock to the first live one (passOn) instead of freeing it, so
-- a releaser (or any newcomer) cannot take it back first. Only the lock's
-- hash is needed for that, so a plain lease's release still takes that one
-- key. The mark stays one field, so counting fields (HLEN) still tells
-- the holds apart from owner, fence and 'w'.

-- starvers returns the entries of mark w (nil or '1'...) as a list of
-- {expiry ms, ttl ms, waiter id, owner}.
local function starvers(w)
  local list, i = {}, 2
  while w do
    local exp, ttl, a, b, j = string.match(w, '^(%d+):(%d+):(%d+):(%d+):()', i)
    if not exp then
      break
    end
    a, b = tonumber(a), tonumber(b)
    list[#list + 1] = {tonumber(exp), tonumber(ttl), string.sub(w, j, j + a - 1), string.sub(w, j + a, j + a + b - 1)}
    i = j + a + b
  end
  return list
end

-- starveMark returns the 'w' mark holding the entries of list that are
-- live at now (server ms).
local function starveMark(list, now)
  local s = {'1'}
  for _, e in ipairs(list) do
    if e[1] > now then
      s[#s + 1] = string.format('%d:%d:%d:%d:', e[1], e[2], #e[3], #e[4]) .. e[3] .. e[4]
    end
  end
  return table.concat(s)
end

-- unstarve removes waiter id's entry, if any, from the 'w' mark of lock
-- (expired entries go too).
local function unstarve(lock, id)
  local w = redis.call('HGET', lock, 'w')
  if w and #w > 1 then
    local now = serverTime()
    local list = starvers(w)
    for _, e in ipairs(list) do
      if e[3] == id then
        e[1] = 0
      end
    end
    redis.call('HSET', lock, 'w', starveMark(list, now))
  end
end

-- passOn is called when the last hold of lock (the field gone, or nil
-- when already deleted) is to go; w is its 'w' mark (nil when nobody
-- waits). With a live starving waiter in w, the lock goes straight to the
-- first one, the way handover gives it to a FIFO waiter (its owner, its
-- hold named by the waiter id, a fresh fence in server µs, the later
-- entries kept in 'w', a life of the waiter's TTL), and only that waiter
-- is woken, on its own channel (ownChannel), with "<fence>:<waiter id>"
-- as the payload; it returns 1. The key is rewritten in place,
-- never deleted (see handover). Otherwise it changes nothing and returns
-- 0: the caller frees the lock and wakes the waiters, if any.
local function passOn(lock, w, wake, gone)
  if w and #w > 1 then
    local now, _, t = serverTime()
    local list = starvers(w)
    for _, e in ipairs(list) do
      if e[1] > now then
        local id, owner = e[3], e[4]
        if owner == '' then
          owner = id
        end
        e[1] = 0 -- leaves the mark
        local fence = t[1] .. string.format('%06d', t[2])
        redis.call('HSET', lock, 'owner', owner, 'fence', fence, 'h:' .. id, fence, 'w', starveMark(list, now))
        if gone then
          redis.call('HDEL', lock, gone)
        end
        redis.call('PEXPIRE', lock, e[2])
        publish(ownChannel(wake, id), fence .. ':' .. id)
        return 1
      end
    end
  end
  return 0
end
