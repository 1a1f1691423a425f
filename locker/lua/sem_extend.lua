-- sem_extend.lua: set one hold of a semaphore to expire ttl from now.
--
-- KEYS[1]  semaphore hash  <prefix>{<name>}:sem
-- KEYS[2]  expiries        <prefix>{<name>}:semz
-- ARGV[1]  owner token (the call id that granted the hold)
-- ARGV[2]  hold field      'h:<call id>'
-- ARGV[3]  ttl in milliseconds
-- ARGV[4]  extend number: increases with every extend of one lease; an
--          extend that arrives after a later one of the same lease was
--          applied is refused, so a late call never shortens the hold
-- ARGV[5]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--
-- Reply: 1 extended; 0 the hold is gone (expired); 2 refused: a later
--        extend of this lease was applied already. Nothing changed unless 1.

-- @include sem_prelude.lua

local h, n = hold(ARGV[2]), tonumber(ARGV[4])
if h and ARGV[2] == 'h:' .. ARGV[1] then
  if h[3] > n then
    finish(ARGV[5])
    return 2
  end
  h[1], h[3] = now + tonumber(ARGV[3]), n
  putHold(ARGV[2], h)
  finish(ARGV[5])
  return 1
end
finish(ARGV[5])
return 0
