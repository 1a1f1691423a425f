-- elect_leader.lua: read the leader: the holder of the lock, with the
-- value of its term's record (see elect_proclaim.lua) or, before it has
-- one, the value it left as a candidate (see elect_acquire.lua: a lock
-- handed over by a clean-up rather than by a release).
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- KEYS[2]  leader record   <prefix>{<name>}:leader
-- KEYS[3]  candidates      <prefix>{<name>}:cand
--
-- Reply: {1, fence, value, n}; {0} no leader: nobody holds the lock, or
--        its holder left no value (a record of an earlier term is
--        ignored). The term began at its fence (server µs).
local f = redis.call('HMGET', KEYS[1], 'fence', 'owner')
if not f[1] then
  return {0}
end
local r = redis.call('HMGET', KEYS[2], 'fence', 'value', 'n')
if r[1] == f[1] then
  return {1, tonumber(f[1]), r[2], tonumber(r[3])}
end
local cand = redis.call('HGET', KEYS[3], f[2])
if not cand then
  return {0}
end
return {1, tonumber(f[1]), string.sub(cand, string.find(cand, ':', 1, true) + 1), 0}
