-- rw_rlock.lua: grant a read hold of the read-write lock, or refuse it.
--
-- KEYS[1]  lock hash       <prefix>{<name>}:rw
-- KEYS[2]  fence counter   <prefix>{<name>}:fence (shared with the mutex)
-- KEYS[3]  wake channel    <prefix>{<name>}:wake (SPUBLISH, same slot)
-- ARGV[1]  owner token
-- ARGV[2]  hold field      'r:<hold id>'
-- ARGV[3]  ttl in milliseconds
--
-- Reply: {1, fence} granted: the hold lives ttl from now (a re-sent call
--        keeps the later expiry); fence is that of the last write grant
--        ('f', else the counter's value, 0 if absent).
--        {0, pttl} refused: another owner holds the write lock, or a writer
--        is waiting (a live intent) and this owner holds no read or write
--        hold yet; pttl is the latest remaining time, in milliseconds, of
--        what refuses it (the write holds, or the intents).
--        {0, 0} refused: the call was abandoned (see rw_cancel.lua).

-- @include rw_prelude.lua

if live['x:' .. ARGV[2]] then
  return {0, 0} -- an abandoned call arriving late
end

local owner, hold, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
if string.sub(hold, 1, 2) ~= 'r:' then
  return redis.error_reply('ERR rw_rlock: not a read hold field')
end
local w, h = writer, live[hold]
-- An owner already inside (holding a read or the write lock) may add read
-- holds while a writer waits: refusing would deadlock it against the writer.
local inside = w == owner or count('r', nil) > count('r', owner)
-- Refused while a blocker lives: another owner's write hold, a live intent
-- (unless inside), or this hold field taken by another owner.
local wait = 0
for k, b in pairs(live) do
  local kind = string.sub(k, 1, 1)
  if (kind == 'w' and b[2] ~= owner) or (kind == 'i' and not inside) or (k == hold and b[2] ~= owner) then
    wait = math.max(wait, b[1] - now)
  end
end
if wait > 0 then
  finish(KEYS[3])
  return {0, wait}
end
local exp = now + ttl
if h and h[1] > exp then
  exp = h[1]
end
put(hold, exp, owner)
if not fence then
  fence = tonumber(redis.call('GET', KEYS[2]) or '0')
  redis.call('HSET', KEYS[1], 'f', string.format('%d', fence))
end
finish(KEYS[3])
return {1, fence}
