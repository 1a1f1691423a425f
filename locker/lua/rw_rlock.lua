-- rw_rlock.lua: grant a read hold of the read-write lock, or refuse it.
--
-- KEYS[1]  lock hash       <prefix>{<name>}:rw
-- KEYS[2]  read expiries   <prefix>{<name>}:rwr
-- ARGV[1]  owner token
-- ARGV[2]  hold field      'r:<call id>'
-- ARGV[3]  ttl in milliseconds
-- ARGV[4]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--
-- Reply: {1, fence} granted: the hold lives ttl from now (a re-sent call
--        keeps the later expiry); fence is that of the last write grant
--        ('f'), or the server time in µs when none is stored (then kept
--        as 'f'), never 0.
--        {0, pttl} refused: another owner holds the write lock, or a writer
--        is waiting (a live intent) and this owner holds no read or write
--        hold yet; pttl is the latest remaining time, in milliseconds, of
--        what refuses it (the write holds, or the intents).
--        {0, 0} refused: the call was abandoned (see rw_cancel.lua).

local want = {ARGV[2]}
-- @include rw_prelude.lua

if get('x:' .. ARGV[2]) then
  return {0, 0} -- an abandoned call arriving late
end

local owner, hold, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
if string.sub(hold, 1, 2) ~= 'r:' then
  return redis.error_reply('ERR rw_rlock: not a read hold field')
end
local h = get(hold)
-- Refused while a blocker lives: another owner's write hold, a live intent
-- (unless this owner is inside: holding a read or the write lock may add
-- read holds while a writer waits, as refusing would deadlock it against
-- the writer), or this hold field taken by another owner.
local wait, inside = 0, nil
for _, k in ipairs(names) do
  local kind, b = string.sub(k, 1, 1), live[k]
  if kind == 'i' and inside == nil then
    inside = writer == owner or ownReads(owner) > 0
  end
  if (kind == 'w' and b[2] ~= owner) or (kind == 'i' and not inside) then
    wait = math.max(wait, b[1] - now)
  end
end
if h and h[2] ~= owner then
  wait = math.max(wait, h[1] - now)
end
if wait > 0 then
  finish(ARGV[4])
  return {0, wait}
end
if h then
  put(hold, math.max(h[1], now + ttl), owner, h[3], h[4])
else
  put(hold, now + ttl, owner, micros, 0)
end
if not fence then
  fence = micros
  redis.call('HSET', H, 'f', string.format('%d', fence))
end
finish(ARGV[4])
return {1, fence}
