-- shared_prelude.lua: what the scripts of every kind of lock share. The
-- mutex, read-write and semaphore preludes include it, and so may any
-- script ("-- @include shared_prelude.lua"; script.go includes a file at
-- most once per script). It only defines functions: including it costs
-- no redis.call.

-- serverTime returns the server's clock (TIME) in ms and in µs, and
-- TIME's reply t itself ({seconds, microseconds}, as text): a fence made
-- from it is t[1] .. string.format('%06d', t[2]). Only the uncontended
-- fast paths of acquire.lua and sem_acquire.lua, which run before any
-- include, read TIME themselves.
local function serverTime()
  local t = redis.call('TIME')
  local s, us = tonumber(t[1]), tonumber(t[2])
  return s * 1000 + math.floor(us / 1000), s * 1000000 + us, t
end

-- purgeExpired deletes from hash h and sorted set z the fields that z
-- scores as expired (a score in [1, now], server ms; the read-write lock
-- and the semaphore score each field by its expiry), 500 at a time, so
-- every expired field is deleted once and nothing live is scanned.
-- each(k, v) sees every such field and its value (false when the hash
-- lacks it) before a batch is deleted, and after(), when given, runs
-- after each batch.
local function purgeExpired(h, z, now, each, after)
  while true do
    local gone = redis.call('ZRANGEBYSCORE', z, 1, now, 'LIMIT', 0, 500)
    if #gone == 0 then
      return
    end
    local vals = redis.call('HMGET', h, unpack(gone))
    for j, k in ipairs(gone) do
      each(k, vals[j])
    end
    redis.call('HDEL', h, unpack(gone))
    redis.call('ZREM', z, unpack(gone))
    if after then
      after()
    end
  end
end

-- publish sends a wake-up on channel ch, with payload msg ('' when nil:
-- only a hand-over to a waiter's own channel carries one, its grant's
-- fence and the waiter id). SPUBLISH keeps the message in the lock's shard (on a Cluster, it
-- never crosses the cluster bus); a server without sharded pub/sub (Redis
-- 6.2, miniredis) refuses it, and gets PUBLISH instead. No other script
-- names either command.
local function publish(ch, msg)
  msg = msg or ''
  local sent = redis.pcall('SPUBLISH', ch, msg)
  if type(sent) == 'table' and sent.err then
    redis.call('PUBLISH', ch, msg)
  end
end
