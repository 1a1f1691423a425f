-- elect_leader.lua: read the leader: the holder of the lock, once it has
-- proclaimed its value in its term (see elect_proclaim.lua).
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- KEYS[2]  leader record   <prefix>{<name>}:leader
--
-- Reply: {1, fence, value, since ms, n}; {0} no leader: nobody holds the
--        lock, or its holder has not proclaimed yet (a record of an
--        earlier term is ignored).
local fence = redis.call('HGET', KEYS[1], 'fence')
if not fence then
  return {0}
end
local r = redis.call('HMGET', KEYS[2], 'fence', 'value', 'since', 'n')
if r[1] ~= fence then
  return {0}
end
return {1, tonumber(fence), r[2], tonumber(r[3]), tonumber(r[4])}
