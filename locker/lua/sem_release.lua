-- sem_release.lua: drop one hold of a semaphore, freeing its permits.
--
-- KEYS[1]  semaphore hash  <prefix>{<name>}:sem
-- KEYS[2]  expiries        <prefix>{<name>}:semz
-- KEYS[3]  FIFO queue      <prefix>{<name>}:semq
-- ARGV[1]  owner token
-- ARGV[2]  hold field      'h:<call id>'
-- ARGV[3]  unused (the leases' common release arguments)
-- ARGV[4]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--
-- Reply: 1 released; 0 the hold is gone (expired, or a re-sent call):
--        nothing but expired fields was changed. Wakes the queue's head,
--        or the waiting Acquires, when permits were freed.

-- @include sem_prelude.lua

local h = hold(ARGV[2])
if h and h[5] == ARGV[1] then
  dropHold(ARGV[2], h)
  finish(ARGV[4])
  return 1
end
finish(ARGV[4])
return 0
