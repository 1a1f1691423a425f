-- mutex_prelude.lua: shared by the mutex scripts that take or free a lock
-- (acquire, multi_acquire, release, dequeue): a script says
-- "-- @include mutex_prelude.lua" (script.go does it when it embeds the
-- script). It only defines functions: including it costs no redis.call.

-- publish sends a wake-up on channel ch: SPUBLISH keeps the message in the
-- lock's shard; a server without it (Redis 6.2, miniredis) refuses it, and
-- gets PUBLISH instead.
local function publish(ch)
  local sent = redis.pcall('SPUBLISH', ch, '')
  if type(sent) == 'table' and sent.err then
    redis.call('PUBLISH', ch, '')
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

-- handover gives the free mutex lock to the first live waiter of FIFO
-- queue q (entries in qx: "<expiry ms>:<ttl ms>:<owner or ''>", see
-- acquire.lua), skipping and dropping expired (crashed) waiters: the lock
-- gets that waiter's owner (its waiter id when '') and one hold named by
-- the waiter id, a fresh fence (server µs) and the 'w' mark, and lives the
-- waiter's TTL but no longer than its queue entry would have (so a waiter
-- that crashed just before holds it no longer than that). The waiter leaves
-- the queue and is woken on its own channel, wake .. ':' .. waiter id. It
-- returns 1 when it handed the lock over, 0 when nobody waits or the
-- head's entry has no hand-over details (written by an older client): the
-- caller then wakes everyone on wake.
local function handover(lock, q, qx, wake)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local h, v = queueHead(q, qx, now, true)
  if not h then
    return 0
  end
  local exp, ttl, owner = string.match(v, '^(%d+):(%d+):(.*)$')
  if not ttl then
    return 0
  end
  exp = tonumber(exp)
  if owner == '' then
    owner = h
  end
  local fence = t[1] .. string.format('%06d', t[2])
  redis.call('HSET', lock, 'owner', owner, 'fence', fence, 'h:' .. h, fence, 'w', '1')
  redis.call('PEXPIRE', lock, math.max(1, math.min(tonumber(ttl), exp - now)))
  redis.call('ZREM', q, h)
  redis.call('HDEL', qx, h)
  publish(wake .. ':' .. h)
  return 1
end
