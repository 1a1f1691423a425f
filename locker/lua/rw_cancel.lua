-- rw_cancel.lua: the clean-up of a read-write call whose outcome is unknown
-- to its caller, or of a writer that gives up: drop the writer's intent and
-- the holds that call may have created (only the owner's, named by the
-- call), and refuse the call should it still arrive.
--
-- KEYS[1]  lock hash       <prefix>{<name>}:rw
-- KEYS[2]  read expiries   <prefix>{<name>}:rwr
-- ARGV[1]  owner token of the holds ('' when there are none)
-- ARGV[2]  intent field    'i:<intent id>', or '' for none
-- ARGV[3]  ms to refuse the acquire call that named the first hold field
--          (its id is unique to that call); 0: do not
-- ARGV[4]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
-- ARGV[5..] hold fields    'r:<call id>' or 'w:<call id>' to drop
--
-- Reply: 1, always. Publishes on the wake channel when that freed capacity
-- (the last intent gone lets readers in).

local want = {unpack(ARGV, 5)}
-- @include rw_prelude.lua

local owner, intent, refuse = ARGV[1], ARGV[2], tonumber(ARGV[3])
if intent ~= '' and string.sub(intent, 1, 2) == 'i:' then
  drop(intent)
end
for i = 5, #ARGV do
  local hold = ARGV[i]
  local h = get(hold)
  if h and h[2] == owner then
    drop(hold)
  end
end
if refuse > 0 and ARGV[5] then
  put('x:' .. ARGV[5], now + refuse, '', 0, 0)
end
finish(ARGV[4])
return 1
