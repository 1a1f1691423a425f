-- force.lua: an operator's forced release of the mutex and the read-write
-- lock of one name: drop the holds granted at or before a server time, so
-- their owners find them gone (their next Extend, TTL or renewal reports the
-- lease lost), and wake the waiters. A grant made after that time is never
-- dropped, so a re-sent or late call changes nothing new.
--
-- KEYS[1]  read-write hash <prefix>{<name>}:rw
-- KEYS[2]  read expiries  <prefix>{<name>}:rwr
-- KEYS[3]  lock hash      <prefix>{<name>}
-- ARGV[1]  as of: server time in µs (from inspect.lua); holds granted at or
--          before it are dropped
-- ARGV[2]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--          (SPUBLISH; PUBLISH on a server without it: Redis 6.2, miniredis)
--
-- Reply: {mutex holds dropped, read-write holds dropped}. The mutex is
--        dropped as a whole (its hash deleted) when its grant's fence (the
--        server µs of the grant) is at or before ARGV[1]; read and write
--        holds one by one by their grant order (every read hold is looked
--        at: an operator's call, not a lock's). The FIFO queue, writer
--        intents, the last write fence and the abandoned-call records are
--        kept.
local want = {}
-- @include rw_prelude.lua

local asof = tonumber(ARGV[1])
local rw, gone = 0, {}
for _, k in ipairs(names) do
  if string.sub(k, 1, 2) == 'w:' and live[k][3] <= asof then
    gone[#gone + 1] = k
  end
end
for _, k in ipairs(allReads()) do
  if live[k][3] <= asof then
    gone[#gone + 1] = k
  end
end
for _, k in ipairs(gone) do
  drop(k)
  rw = rw + 1
end
finish(ARGV[2])

local mutex = 0
local owner, fence, w = unpack(redis.call('HMGET', KEYS[3], 'owner', 'fence', 'w'))
if owner and tonumber(fence) and tonumber(fence) <= asof then
  mutex = redis.call('HLEN', KEYS[3]) - 2 -- owner and fence
  if w then
    mutex = mutex - 1 -- the waited-for mark
  end
  redis.call('DEL', KEYS[3])
  -- SPUBLISH keeps the message in the lock's shard; a server without it
  -- (Redis 6.2, miniredis) refuses it, and gets PUBLISH instead.
  local sent = redis.pcall('SPUBLISH', ARGV[2], '')
  if type(sent) == 'table' and sent.err then
    redis.call('PUBLISH', ARGV[2], '')
  end
end
return {mutex, rw}
