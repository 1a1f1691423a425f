-- rw_lock.lua: grant a write hold of the read-write lock, or refuse it and
-- record the waiting writer's intent.
--
-- KEYS[1]  lock hash       <prefix>{<name>}:rw
-- KEYS[2]  fence counter   <prefix>{<name>}:fence (shared with the mutex)
-- KEYS[3]  wake channel    <prefix>{<name>}:wake (SPUBLISH, same slot)
-- ARGV[1]  owner token
-- ARGV[2]  hold field      'w:<hold id>'
-- ARGV[3]  ttl in milliseconds (of the hold, and of the intent)
-- ARGV[4]  intent field    'i:<intent id>' of a blocking Lock, '' for TryLock
--
-- Reply: {1, fence} granted, and the intent dropped: a new grant takes the
--        next fence; the owner of the live write holds (a re-sent call or a
--        reentrant hold) gets the current fence, its hold living ttl from
--        now (a re-sent call keeps the later expiry).
--        {0, pttl} refused: another owner holds a write hold, or any read
--        hold lives (also this owner's: no upgrade). The intent, if given,
--        is set to expire ttl from now, so new readers are refused; pttl is
--        the latest remaining time, in milliseconds, of the holds that
--        refuse it, capped at ttl/2 when an intent was given so the writer
--        retries before its intent lapses.
--        {0, 0} refused: the call was abandoned (see rw_cancel.lua).

-- @include rw_prelude.lua

if live['x:' .. ARGV[2]] then
  return {0, 0} -- an abandoned call arriving late
end

local owner, hold, ttl, intent = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
if string.sub(hold, 1, 2) ~= 'w:' or (intent ~= '' and string.sub(intent, 1, 2) ~= 'i:') then
  return redis.error_reply('ERR rw_lock: not a write hold or intent field')
end
local w, h = writer, live[hold]
if w == owner then
  local exp = now + ttl
  if h and h[1] > exp then
    exp = h[1]
  end
  put(hold, exp, owner)
  if intent ~= '' then
    drop(intent)
  end
  finish(KEYS[3])
  return {1, fence or 0}
end
-- Refused while another owner's write hold or any read hold lives.
local wait = 0
for k, b in pairs(live) do
  local kind = string.sub(k, 1, 1)
  if kind == 'w' or kind == 'r' then
    wait = math.max(wait, b[1] - now)
  end
end
if wait > 0 then
  if intent ~= '' then
    put(intent, now + ttl, '')
    wait = math.min(wait, math.max(1, math.floor(ttl / 2)))
  end
  finish(KEYS[3])
  return {0, wait}
end
-- The next fence, as the mutex takes it: above the last one and at least
-- the server's clock in microseconds, so fences keep increasing even when
-- the counter is lost with a restart.
fence = math.max(tonumber(redis.call('GET', KEYS[2]) or '0') + 1,
  tonumber(t[1]) * 1000000 + tonumber(t[2]))
redis.call('SET', KEYS[2], string.format('%d', fence))
redis.call('HSET', KEYS[1], 'f', string.format('%d', fence))
put(hold, now + ttl, owner)
if intent ~= '' then
  drop(intent)
end
finish(KEYS[3])
return {1, fence}
