-- release.lua: drop one hold of the owner (and, for a single-hold owner,
-- every hold it was granted before this one); free the lock after the last
-- hold and wake the waiters, if any may wait (field 'w', see acquire.lua).
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- KEYS[2]  waiter queue    <prefix>{<name>}:q (a FIFO lease only)
-- KEYS[3]  waiter expiries <prefix>{<name>}:qx (a FIFO lease only)
-- ARGV[1]  owner token
-- ARGV[2]  hold id (the call id of the grant)
-- ARGV[3]  1: also drop the owner's holds granted before this one (a
--          caller-chosen Owner that is not reentrant: a hand-over's Unlock
--          frees the lock); '': only this hold (reentrant)
-- ARGV[4]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--          (publish in shared_prelude.lua)
--
-- When the release frees the lock and someone may wait (the 'w' mark), it
-- hands the lock to the first live starving waiter kept in the mark (a
-- default-mode waiter that waited past its threshold: see passOn in
-- mutex_prelude.lua), or else a FIFO lease hands it to the first live
-- queued waiter (see handover): either way in this same script, so the
-- lock is never free in between, and only that waiter is woken. Otherwise
-- the release wakes the waiters. With nobody waiting, neither costs a
-- call.
--
-- Reply: 1 released; 0 nobody holds the lock or this hold is gone (the
--        lease expired, or a re-sent call already released it); -1 another
--        owner holds the lock. Nothing is changed unless 1. A release that
--        arrives late never drops a hold granted after its own.

local hold = 'h:' .. ARGV[2]
local v = redis.call('HMGET', KEYS[1], 'owner', hold, 'w')
if not v[1] then
  return 0
end
if v[1] ~= ARGV[1] then
  return -1
end
if not v[2] then
  return 0
end
local n = redis.call('HLEN', KEYS[1])
if n == 3 then
  -- the fast path: the only hold, and nobody waits
  redis.call('DEL', KEYS[1])
  return 1
end

-- After the fast path, which so creates none of its functions:
-- @include mutex_prelude.lua

local left = n - 3
if v[3] then
  left = left - 1
end
if left > 0 and ARGV[3] == '1' then
  local order = tonumber(string.match(v[2], '^%d+'))
  local all = redis.call('HGETALL', KEYS[1])
  local drop = {}
  for i = 1, #all, 2 do
    local k = all[i]
    if string.sub(k, 1, 2) == 'h:' and k ~= hold and tonumber(string.match(all[i + 1], '^%d+')) <= order then
      drop[#drop + 1] = k
    end
  end
  if #drop > 0 then
    redis.call('HDEL', KEYS[1], unpack(drop))
    left = left - #drop
  end
end
if left <= 0 then
  -- hand the lock over in place (passOn, handover), or free it
  if not (passOn(KEYS[1], v[3], ARGV[4], hold) == 1 or
      v[3] and #KEYS >= 3 and handover(KEYS[1], KEYS[2], KEYS[3], ARGV[4], hold) == 1) then
    redis.call('DEL', KEYS[1])
    if v[3] then
      publish(ARGV[4])
    end
  end
else
  redis.call('HDEL', KEYS[1], hold)
end
return 1
