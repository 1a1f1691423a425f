-- rw_cancel.lua: drop a waiting writer's intent and/or an abandoned hold.
--
-- KEYS[1]  lock hash       <prefix>{<name>}:rw
-- KEYS[2]  wake channel    <prefix>{<name>}:wake (SPUBLISH, same slot)
-- ARGV[1]  owner token of the hold ('' when ARGV[2] is '')
-- ARGV[2]  hold field      'r:<hold id>' or 'w:<hold id>', or '' for none
-- ARGV[3]  intent field    'i:<intent id>', or '' for none
-- ARGV[4]  ms to refuse the acquire call of ARGV[2] should it still arrive
--          (its hold id is unique to that call); 0: do not
--
-- Reply: 1, always. Drops the intent and the hold (if it is the owner's),
--        lists the call as abandoned (the acquire scripts refuse it);
--        publishes on the wake channel when that freed capacity (the last
--        intent gone lets readers in).

-- @include rw_prelude.lua

local owner, hold, intent = ARGV[1], ARGV[2], ARGV[3]
if intent ~= '' and string.sub(intent, 1, 2) == 'i:' then
  drop(intent)
end
if hold ~= '' and live[hold] and live[hold][2] == owner then
  drop(hold)
end
if hold ~= '' and tonumber(ARGV[4]) > 0 then
  put('x:' .. hold, now + tonumber(ARGV[4]), '')
end
finish(KEYS[2])
return 1
