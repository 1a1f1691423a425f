-- rw_lock.lua: grant a write hold of the read-write lock, or refuse it and
-- record the waiting writer's intent.
--
-- KEYS[1]  lock hash       <prefix>{<name>}:rw
-- KEYS[2]  read expiries   <prefix>{<name>}:rwr
-- ARGV[1]  owner token
-- ARGV[2]  hold field      'w:<call id>'
-- ARGV[3]  ttl in milliseconds (of the hold, and of the intent)
-- ARGV[4]  intent field    'i:<intent id>' of a blocking Lock, '' for TryLock
-- ARGV[5]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
-- ARGV[6]  1: the blocking Lock of intent ARGV[4] has waited past its
--          starvation threshold (RWMutexOptions.StarvationThreshold): its
--          intent is kept as a starving writer's (extend number 1, order:
--          when it first starved), and while such an intent lives a free
--          write lock goes only to the writer that starved first; '': not
--          starving
--
-- Reply: {1, fence} granted, and the intent dropped: a new grant's fence is
--        the larger of the last write fence + 1 and the server time in µs;
--        the owner of the live write holds (a re-sent call, a hand-over or
--        a reentrant hold) gets the current fence, its hold living ttl from
--        now (a re-sent call keeps the later expiry).
--        {0, pttl} refused: another owner holds a write hold, or any read
--        hold lives (also this owner's: no upgrade). The intent, if given,
--        is set to expire ttl from now, so new readers are refused; pttl is
--        the latest remaining time, in milliseconds, of the holds that
--        refuse it, capped at ttl/2 when an intent was given so the writer
--        retries before its intent lapses.
--        {0, pttl} refused also when the lock is free but another
--        writer's starving intent lives (see ARGV[6]); pttl is that
--        intent's remaining time (capped at ttl/2 with an intent given).
--        {0, 0} refused: the call was abandoned (see rw_cancel.lua).

local want = {}
-- @include rw_prelude.lua

if get('x:' .. ARGV[2]) then
  return {0, 0} -- an abandoned call arriving late
end

local owner, hold, ttl, intent = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
if string.sub(hold, 1, 2) ~= 'w:' or (intent ~= '' and string.sub(intent, 1, 2) ~= 'i:') then
  return redis.error_reply('ERR rw_lock: not a write hold or intent field')
end
local h = get(hold)
if writer == owner then
  if h then
    put(hold, math.max(h[1], now + ttl), owner, h[3], h[4])
  else
    put(hold, now + ttl, owner, micros, 0)
  end
  if intent ~= '' then
    drop(intent)
  end
  finish(ARGV[5])
  return {1, fence or 0}
end
-- Refused while another owner's write hold or any read hold lives.
local wait = math.max(0, readUntil() - now)
for _, k in ipairs(names) do
  if string.sub(k, 1, 1) == 'w' then
    wait = math.max(wait, live[k][1] - now)
  end
end
-- A writer that starved first goes first: the lock stops being barge-able
-- (no redis.call: the intents were loaded with the state).
local first = nil
for _, k in ipairs(names) do
  local b = live[k]
  if string.sub(k, 1, 1) == 'i' and b and b[4] == 1 and (not first or b[3] < live[first][3]) then
    first = k
  end
end
if first and first ~= intent then
  wait = math.max(wait, live[first][1] - now)
end
if wait > 0 then
  if intent ~= '' then
    local old = get(intent)
    if ARGV[6] == '1' then
      put(intent, now + ttl, '', (old and old[4] == 1) and old[3] or micros, 1)
    else
      put(intent, now + ttl, '', 0, 0)
    end
    wait = math.min(wait, math.max(1, math.floor(ttl / 2)))
  end
  finish(ARGV[5])
  return {0, wait}
end
-- The next fence: above the last one kept here, and at least the server's
-- clock in microseconds, so fences keep increasing across expiries and
-- restarts (as long as the server clock does not go back).
fence = math.max((fence or 0) + 1, micros)
redis.call('HSET', H, 'f', string.format('%d', fence))
put(hold, now + ttl, owner, micros, 0)
if intent ~= '' then
  drop(intent)
end
finish(ARGV[5])
return {1, fence}
