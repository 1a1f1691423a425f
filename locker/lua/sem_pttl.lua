-- sem_pttl.lua: the remaining time of one hold of a semaphore.
--
-- KEYS[1]  semaphore hash  <prefix>{<name>}:sem
-- KEYS[2]  expiries        <prefix>{<name>}:semz
-- ARGV[1]  owner token (the call id that granted the hold)
-- ARGV[2]  hold field      'h:<call id>'
-- ARGV[3]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--
-- Reply: {1, pttl} the hold lives, pttl its remaining milliseconds; {0, 0}
--        the hold is gone (expired).

-- @include sem_prelude.lua

local h = hold(ARGV[2])
finish(ARGV[3])
if h and ARGV[2] == 'h:' .. ARGV[1] then
  return {1, h[1] - now}
end
return {0, 0}
