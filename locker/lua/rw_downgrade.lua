-- rw_downgrade.lua: turn a write hold into a read hold in one step.
--
-- KEYS[1]  lock hash       <prefix>{<name>}:rw
-- KEYS[2]  read expiries   <prefix>{<name>}:rwr
-- ARGV[1]  owner token
-- ARGV[2]  write hold field 'w:<call id>'
-- ARGV[3]  ttl in milliseconds of the read hold
-- ARGV[4]  read hold field  'r:<call id>' (the id of this downgrade call)
-- ARGV[5]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
-- ARGV[6]  1: also drop the owner's write holds granted before this one
--          (a caller-chosen Owner that is not reentrant, as rw_release
--          does); '': only this one
--
-- Reply: {1, fence} the write hold is dropped and the read hold lives ttl
--        from now (a re-sent call, finding the write hold gone and the read
--        hold live, succeeds too); fence is that of the write grant. Waiting
--        readers are woken when no intent blocks them.
--        {0, 0} the write hold is gone (expired, or dropped by the clean-up
--        of this very call: a late call changes nothing); {-1, 0} it is gone
--        and another owner excludes it; nothing changed then.

local want = {ARGV[4]}
-- @include rw_prelude.lua

local owner, whold, ttl, rhold = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
if string.sub(whold, 1, 2) ~= 'w:' or string.sub(rhold, 1, 2) ~= 'r:' then
  return redis.error_reply('ERR rw_downgrade: not a write and a read hold field')
end
local h, r = get(whold), get(rhold)
if r and r[2] ~= owner then
  r = nil
end
if h and h[2] == owner then
  if ARGV[6] == '1' then
    for _, k in ipairs(earlier(owner, whold, h[3])) do
      drop(k)
    end
  end
  drop(whold)
  if r then
    put(rhold, math.max(r[1], now + ttl), owner, r[3], r[4])
  else
    put(rhold, now + ttl, owner, micros, 0)
  end
  finish(ARGV[5])
  return {1, fence or 0}
end
if r then
  finish(ARGV[5])
  return {1, fence or 0}
end
local status = stale(owner, whold)
finish(ARGV[5])
return {status, 0}
