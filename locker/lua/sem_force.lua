-- sem_force.lua: an operator's forced release of a semaphore's holds
-- granted at or before a server time (see force.lua for the mutex and the
-- read-write lock): their owners find them gone (their next Extend, TTL
-- or renewal reports the lease lost), and the permits they free wake the
-- waiters that fit, one per permit, as a release does. A hold granted
-- after that time is never dropped, so a re-sent or late call changes
-- nothing new.
--
-- KEYS[1]  semaphore hash  <prefix>{<name>}:sem
-- KEYS[2]  expiries        <prefix>{<name>}:semz
-- ARGV[1]  as of: server time in µs (from inspect.lua); holds whose fence
--          (max(last fence + 1, server µs) at their grant) is at or before
--          it are dropped
-- ARGV[2]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--
-- Reply: the number of holds dropped. The waiters, a stored limit and the
--        abandoned-call records are kept; every hold is looked at (an
--        operator's call, not a lock's).

-- @include sem_prelude.lua

local asof, dropped = tonumber(ARGV[1]), 0
local all = redis.call('HGETALL', H)
for j = 1, #all, 2 do
  local k = all[j]
  if string.sub(k, 1, 2) == 'h:' then
    local h = parseHold(all[j + 1])
    if h and h[4] <= asof then
      dropHold(k, h)
      dropped = dropped + 1
    end
  end
end
finish(ARGV[2])
return dropped
