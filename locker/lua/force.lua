-- force.lua: an operator's forced release of the mutex and the read-write
-- lock of one name: drop the holds granted at or before a server time, so
-- their owners find them gone (their next Extend, TTL or renewal reports the
-- lease lost), and wake the waiters. A grant made after that time is never
-- dropped, so a re-sent or late call changes nothing new.
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- KEYS[2]  read-write hash <prefix>{<name>}:rw
-- ARGV[1]  as of: server time in µs (from inspect.lua); holds granted at or
--          before it are dropped
-- ARGV[2]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--          (SPUBLISH; PUBLISH on a server without it: Redis 6.2, miniredis)
--
-- Reply: {mutex holds dropped, read-write holds dropped}. The mutex is
--        dropped as a whole (its hash deleted) when its grant's fence (the
--        server µs of the grant) is at or before ARGV[1]; read and write
--        holds one by one by their grant order. The FIFO queue, writer
--        intents, the last write fence and the abandoned-call records are
--        kept.
local asof = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local mutex = 0
local owner, fence, w = unpack(redis.call('HMGET', KEYS[1], 'owner', 'fence', 'w'))
if owner and tonumber(fence) and tonumber(fence) <= asof then
  mutex = redis.call('HLEN', KEYS[1]) - 2 -- owner and fence
  if w then
    mutex = mutex - 1 -- the waited-for mark
  end
  redis.call('DEL', KEYS[1])
end

local rw, drop = 0, {}
local all = redis.call('HGETALL', KEYS[2])
for j = 1, #all, 2 do
  local k, v = all[j], all[j + 1]
  local kind = string.sub(k, 1, 2)
  if kind == 'w:' or kind == 'r:' then
    local exp, order = string.match(v, '^(%d+):(%d+):')
    if tonumber(order) and tonumber(order) <= asof then
      drop[#drop + 1] = k
      if tonumber(exp) > now then
        rw = rw + 1
      end
    end
  end
end
if #drop > 0 then
  redis.call('HDEL', KEYS[2], unpack(drop))
end

if mutex > 0 or rw > 0 then
  -- SPUBLISH keeps the message in the lock's shard; a server without it
  -- (Redis 6.2, miniredis) refuses it, and gets PUBLISH instead.
  local sent = redis.pcall('SPUBLISH', ARGV[2], '')
  if type(sent) == 'table' and sent.err then
    redis.call('PUBLISH', ARGV[2], '')
  end
end
return {mutex, rw}
