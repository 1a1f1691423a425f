-- sem_permits.lua: set or clear the permit limit of a semaphore for every
-- client (SetPermits).
--
-- KEYS[1]  semaphore hash  <prefix>{<name>}:sem
-- KEYS[2]  expiries        <prefix>{<name>}:semz
-- KEYS[3]  FIFO queue      <prefix>{<name>}:semq
-- ARGV[1]  the limit, at least 1; '' clears it (each client's own again)
-- ARGV[2]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--
-- Reply: the permits held now. Holds above a lowered limit are kept until
--        released or expired; no grant is made while held + asked exceeds
--        the limit. The hash stays, without expiry, while a limit is set.

-- @include sem_prelude.lua

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
