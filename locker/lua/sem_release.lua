-- sem_release.lua: drop one hold of a semaphore, freeing its permits.
--
-- KEYS[1]  semaphore hash  <prefix>{<name>}:sem
-- KEYS[2]  expiries        <prefix>{<name>}:semz
-- ARGV[1]  owner token (the call id that granted the hold)
-- ARGV[2]  hold field      'h:<call id>'
-- ARGV[3]  unused (the leases' common release arguments)
-- ARGV[4]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--
-- Reply: 1 released; 0 the hold is gone (expired, or a re-sent call):
--        nothing but expired fields was changed. Wakes, one per freed
--        permit, the waiters that fit (see sem_prelude.lua).
--
-- The fast path: the hash holds only 'f', 'p', 'm' and this hold (nobody
-- else holds, nobody waits, no stored limit, no record): HLEN, HEXISTS
-- and DEL. The hash lives no longer than its holds, so while it exists
-- its only hold has not expired.
if ARGV[2] ~= 'h:' .. ARGV[1] then
  return 0
end
if redis.call('HLEN', KEYS[1]) == 4 and redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then
  redis.call('DEL', KEYS[1], KEYS[2])
  return 1
end

-- @include sem_prelude.lua

local h = hold(ARGV[2])
if h then
  dropHold(ARGV[2], h)
  finish(ARGV[4])
  return 1
end
finish(ARGV[4])
return 0
