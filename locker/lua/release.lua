-- release.lua: drop one hold of the owner (and, for a single-hold owner,
-- every hold it was granted before this one); free the lock after the last
-- hold and wake the waiters.
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- ARGV[1]  owner token
-- ARGV[2]  hold id (the call id of the grant)
-- ARGV[3]  1: also drop the owner's holds granted before this one (a
--          caller-chosen Owner that is not reentrant: a hand-over's Unlock
--          frees the lock); 0: only this hold (reentrant)
-- ARGV[4]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--          (SPUBLISH; PUBLISH on a server without it: Redis 6.2, miniredis)
--
-- Reply: 1 released; 0 nobody holds the lock or this hold is gone (the
--        lease expired, or a re-sent call already released it); -1 another
--        owner holds the lock. Nothing is changed unless 1. A release that
--        arrives late never drops a hold granted after its own.
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then
  return 0
end
if owner ~= ARGV[1] then
  return -1
end
local hold = 'h:' .. ARGV[2]
local v = redis.call('HGET', KEYS[1], hold)
if not v then
  return 0
end
local left = redis.call('HLEN', KEYS[1]) - 3
if left > 0 and ARGV[3] == '1' then
  local order = tonumber(string.match(v, '^%d+'))
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
  redis.call('DEL', KEYS[1])
  -- SPUBLISH keeps the message in the lock's shard; a server without it
  -- (Redis 6.2, miniredis) refuses it, and gets PUBLISH instead.
  local sent = redis.pcall('SPUBLISH', ARGV[4], '')
  if type(sent) == 'table' and sent.err then
    redis.call('PUBLISH', ARGV[4], '')
  end
else
  redis.call('HDEL', KEYS[1], hold)
end
return 1
