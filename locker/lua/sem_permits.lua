-- sem_permits.lua: set or clear the permit limit of a semaphore for every
-- client (SetPermits). Every call has its own id, so that its clean-up
-- (sem_cancel.lua, after an unknown outcome) can undo exactly what this
-- call stored and refuse it should it arrive later.
--
-- KEYS[1]  semaphore hash  <prefix>{<name>}:sem
-- KEYS[2]  expiries        <prefix>{<name>}:semz
-- ARGV[1]  the limit, at least 1; '' clears it (each client's own again)
-- ARGV[2]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
-- ARGV[3]  call id
-- ARGV[4]  ms the undo record of this call lives (the abandoned-call
--          window: a clean-up may undo the call for that long)
--
-- Reply: the permits held now (at least 0), or -1: refused, the call was
--        abandoned (see sem_cancel.lua) and changed nothing. Holds above a
--        lowered limit are kept until released or expired; no grant is
--        made while held + asked exceeds the limit. The hash stays,
--        without expiry, while a limit is set. A call that changes the
--        limit records 'u' = "<call id>:<the limit before, or ''>", scored
--        by its expiry in KEYS[2], so that its clean-up can restore the
--        limit it replaced (while no later call replaced it in turn). A
--        re-sent call (its id in 'u') changes nothing.

-- @include sem_prelude.lua

local id = ARGV[3]
if redis.call('HEXISTS', H, 'x:' .. id) == 1 then
  finish(ARGV[2])
  return -1 -- an abandoned call arriving late
end
local undo = redis.call('HGET', H, 'u')
if undo and string.sub(undo, 1, #id + 1) == id .. ':' then
  finish(ARGV[2])
  return held -- a re-sent call: applied already
end
local before = st[3] or ''
if before ~= ARGV[1] or undo then
  -- Record what this call replaces (also when it is the same value: a
  -- clean-up of the call whose record this replaces must not undo it now).
  local exp = now + tonumber(ARGV[4])
  redis.call('HSET', H, 'u', id .. ':' .. before)
  redis.call('ZADD', Z, exp, 'u')
end
if ARGV[1] == '' then
  redis.call('HDEL', H, 'n')
  limit, kept = tonumber(st[4]), false
else
  redis.call('HSET', H, 'n', ARGV[1])
  limit, kept = tonumber(ARGV[1]), true
end
freed = true -- the limit may have risen: wake who can use it
finish(ARGV[2])
return held
