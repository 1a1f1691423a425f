-- elect_acquire.lua: a candidate's acquire.lua: a grant makes the
-- candidate the leader (the leader record of the new term, its observers
-- told), and a candidate that waits in line leaves its value with the
-- name, so that the release that hands it the lock records it as leader
-- in that same call (see elect_release.lua).
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- KEYS[2]  waiter queue    <prefix>{<name>}:q
-- KEYS[3]  waiter expiries <prefix>{<name>}:qx
-- KEYS[4]  abandoned calls <prefix>{<name>}:x
-- KEYS[5]  leader record   <prefix>{<name>}:leader (see elect_proclaim.lua)
-- KEYS[6]  candidates      <prefix>{<name>}:cand (hash: waiter id ->
--                          "<expiry ms in server time>:<value>", each
--                          entry living as long as its queue entry)
-- ARGV[1]  owner token ('' for the call id), as acquire.lua's
-- ARGV[2]  call id
-- ARGV[3]  ttl in milliseconds
-- ARGV[4]  queue ttl in milliseconds ('' for 0)
-- ARGV[5]  waiter id ('' when not queued)
-- ARGV[6]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
-- ARGV[7]  1 or 2: the caller waited before (see acquire.lua)
-- ARGV[8]  the candidate's value
-- ARGV[9]  observers' channel <prefix>{<name>}:leader (a channel, not a
--          key; publish in shared_prelude.lua)
--
-- Reply: as acquire.lua's.

-- serverTime and publish (acquire.lua's own include is then skipped):
-- @include shared_prelude.lua

local function acquire()
-- @include acquire.lua
end
local r = acquire()
local fence, hold = r, ARGV[2]
if type(r) == 'table' then
  fence = nil
  if r[1] == 1 or r[1] == 2 then
    fence = r[2]
  end
  if r[1] == 2 then
    hold = ARGV[5]
  end
end
local qttl = tonumber(ARGV[4]) or 0
if fence then
  -- a grant: a new term, unless this very call's re-sent one (whose
  -- record may hold a later Proclaim's value)
  local f = string.format('%d', fence)
  if redis.call('HGET', KEYS[5], 'fence') ~= f then
    redis.call('HSET', KEYS[5], 'fence', f, 'hold', hold, 'value', ARGV[8], 'n', '0')
    redis.call('PEXPIRE', KEYS[5], redis.call('PTTL', KEYS[1]))
    publish(ARGV[9], f)
  end
  if ARGV[5] ~= '' then
    redis.call('HDEL', KEYS[6], ARGV[5])
  end
elseif #r == 3 and qttl > 0 and ARGV[5] ~= '' then
  -- a waiter in line: its value, until its queue entry would expire
  local now = serverTime()
  redis.call('HSET', KEYS[6], ARGV[5], (now + qttl) .. ':' .. ARGV[8])
  if redis.call('PTTL', KEYS[6]) < 3 * qttl then
    redis.call('PEXPIRE', KEYS[6], 3 * qttl)
  end
end
return r
