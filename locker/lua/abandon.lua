-- abandon.lua: an acquire call's outcome is unknown to its caller (its
-- context ended, or the connection broke after the command may have been
-- read): the script may have run, or may still arrive (a client may send it
-- later, on another connection). Drop the hold that very call granted, if
-- any (never another hold, even of the same owner), and refuse the call if
-- it arrives after this.
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- KEYS[2]  abandoned calls <prefix>{<name>}:x (sorted set: call id by
--                          expiry ms in server time)
-- KEYS[3]  waiter queue    <prefix>{<name>}:q (FIFO calls only)
-- KEYS[4]  waiter expiries <prefix>{<name>}:qx (FIFO calls only)
-- ARGV[1]  owner token of the call
-- ARGV[2]  call id of the abandoned acquire call
-- ARGV[3]  how long the call id stays refused, in milliseconds
-- ARGV[4]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--          (publish in shared_prelude.lua)
-- ARGV[5]  waiter id of a FIFO call, whose queue entry the call may have
--          made, or '' (then KEYS[3] and KEYS[4] are not given)
--
-- When dropping the hold frees the lock, a starving waiter kept in the
-- lock's 'w' mark gets it (see passOn in mutex_prelude.lua), else the
-- waiters are woken.
--
-- Reply: 1 the call's hold was dropped, 0 it held none. The acquire script
-- refuses a call id listed in KEYS[2]; expired ids are trimmed here.
-- @include mutex_prelude.lua

local dropped = 0
local free = false
if redis.call('HGET', KEYS[1], 'owner') == ARGV[1] and
    redis.call('HDEL', KEYS[1], 'h:' .. ARGV[2]) == 1 then
  dropped = 1
  local n = redis.call('HLEN', KEYS[1])
  if n <= 2 then
    redis.call('DEL', KEYS[1])
    free = true
  elseif n == 3 then
    local w = redis.call('HGET', KEYS[1], 'w')
    -- the last hold is gone: a starving waiter gets the lock (passOn),
    -- else it is freed
    if w and passOn(KEYS[1], w, ARGV[4], nil) == 0 then
      redis.call('DEL', KEYS[1])
      free = true
    end
  end
end
if ARGV[5] ~= '' and redis.call('ZREM', KEYS[3], ARGV[5]) == 1 then
  redis.call('HDEL', KEYS[4], ARGV[5])
  free = free or redis.call('EXISTS', KEYS[1]) == 0
end
if free then
  publish(ARGV[4])
end
abandon(KEYS[2], ARGV[2], serverTime(), tonumber(ARGV[3]))
return dropped
