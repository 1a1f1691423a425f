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
--          (publish in shared_prelude.lua)
--
-- Reply: {mutex holds dropped, read-write holds dropped}. The mutex's
--        holds are dropped as a whole when its grant's fence (the server
--        µs of the grant) is at or before ARGV[1]: a starving waiter of
--        the default mode is then handed the lock (passOn, as by a
--        release), else the hash is deleted and the waiters woken; read and write
--        holds one by one by their grant order (every read hold is looked
--        at: an operator's call, not a lock's). The FIFO queue, writer
--        intents, the last write fence and the abandoned-call records are
--        kept.
local want = {}
-- @include rw_prelude.lua
-- passOn (a starving waiter gets the mutex):
-- @include mutex_prelude.lua

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
  local holds = {}
  for _, k in ipairs(redis.call('HKEYS', KEYS[3])) do
    if string.sub(k, 1, 2) == 'h:' then
      holds[#holds + 1] = k
    end
  end
  mutex = #holds
  if #holds > 0 then
    redis.call('HDEL', KEYS[3], unpack(holds)) -- owner and fence keep the key
  end
  -- a starving waiter (default mode) is handed the lock, as by a release;
  -- else it is freed and the waiters woken
  if passOn(KEYS[3], w, ARGV[2], nil) == 0 then
    redis.call('DEL', KEYS[3])
    publish(ARGV[2])
  end
end
return {mutex, rw}
