-- elect_release.lua: end a leader's term: release.lua on the term's lock,
-- which hands it to the next candidate, if one waits; that candidate is
-- then recorded as the leader (its value, left by elect_acquire.lua) and
-- the observers are told, in this same call. Otherwise the leader record
-- is dropped if it is this term's, so that no reader takes the resigned
-- leader for the current one.
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- KEYS[2]  waiter queue    <prefix>{<name>}:q
-- KEYS[3]  waiter expiries <prefix>{<name>}:qx
-- KEYS[4]  leader record   <prefix>{<name>}:leader (see elect_proclaim.lua)
-- KEYS[5]  candidates      <prefix>{<name>}:cand (see elect_acquire.lua)
-- ARGV[1]  owner token
-- ARGV[2]  hold id
-- ARGV[3]  1: also drop the owner's earlier holds (see release.lua)
-- ARGV[4]  wake channel    <prefix>{<name>}:wake (a channel, not a key)
--          (publish in shared_prelude.lua)
-- ARGV[5]  observers' channel <prefix>{<name>}:leader (a channel, not a
--          key)
--
-- Reply: as release.lua's.

-- serverTime and publish (release.lua's own include is then skipped):
-- @include shared_prelude.lua

local function release()
-- @include release.lua
end
local r = release()
if r ~= 1 then
  return r
end
if redis.call('HGET', KEYS[4], 'hold') == ARGV[2] then
  redis.call('DEL', KEYS[4])
end
local o = redis.call('HMGET', KEYS[1], 'owner', 'fence')
local cand = o[1] and o[1] ~= ARGV[1] and redis.call('HGET', KEYS[5], o[1])
if cand then
  -- handed over (the new owner is the waiter id): the next leader
  local at = string.find(cand, ':', 1, true)
  redis.call('HSET', KEYS[4], 'fence', o[2], 'hold', o[1], 'value', string.sub(cand, at + 1), 'n', '0')
  redis.call('PEXPIRE', KEYS[4], redis.call('PTTL', KEYS[1]))
  publish(ARGV[5], o[2])
  -- once a term: the entries of candidates gone (crashed, or given up)
  local now, gone = serverTime(), {o[1]}
  local all = redis.call('HGETALL', KEYS[5])
  for i = 1, #all, 2 do
    if (tonumber(string.match(all[i + 1], '^%d+')) or 0) <= now then
      gone[#gone + 1] = all[i]
    end
  end
  redis.call('HDEL', KEYS[5], unpack(gone))
end
return r
