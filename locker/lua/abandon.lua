-- abandon.lua: an acquire call failed on the client side (its context
-- ended, or the connection broke), so the caller cannot know whether the
-- script ran, or whether it is still on its way to the server (a client may
-- send it later, on another connection than this call). Undo a grant it may
-- have made and refuse it if it arrives after this.
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- KEYS[2]  wake channel    <prefix>{<name>}:wake
-- KEYS[3]  abandoned calls <prefix>{<name>}:x (sorted set: call id by
--                          expiry ms in server time)
-- ARGV[1]  owner token
-- ARGV[2]  hold id
-- ARGV[3]  call id of the failed acquire call
-- ARGV[4]  1: drop the owner's hold ARGV[2] if the call granted it; 0: keep
--          it (a caller-chosen single-hold owner, whose earlier grant the
--          call only renewed)
-- ARGV[5]  how long the call id stays refused, in milliseconds; 0: the
--          server answered the call, do not list it
--
-- Reply: 1 a hold was dropped, 0 none was. The acquire script refuses a
-- call id listed in KEYS[3]; expired ids are trimmed here.
local dropped = 0
if ARGV[4] == '1' and redis.call('HGET', KEYS[1], 'owner') == ARGV[1] and
    redis.call('HDEL', KEYS[1], 'h:' .. ARGV[2]) == 1 then
  dropped = 1
  if redis.call('HLEN', KEYS[1]) <= 2 then
    redis.call('DEL', KEYS[1])
    redis.call('SPUBLISH', KEYS[2], '')
  end
end
local ttl = tonumber(ARGV[5])
if ttl <= 0 then
  return dropped
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
redis.call('ZADD', KEYS[3], now + ttl, ARGV[3])
if redis.call('PTTL', KEYS[3]) < ttl then
  redis.call('PEXPIRE', KEYS[3], ttl)
end
return dropped
