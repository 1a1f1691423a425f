-- unclaim.lua: a Claim call's outcome is unknown to its caller. Drop the
-- claim if that call made it, and refuse the call should it arrive later,
-- so that a retry (by anyone) can win the key.
--
-- KEYS[1]  claim key       <prefix>{<key>}:claim
-- ARGV[1]  claim token of the abandoned call
-- ARGV[2]  how long the call stays refused, in milliseconds
--
-- Reply: 1 the key now refuses the call (it held this claim, none, or
--        only refusals, to which this one is added); 0 another token holds
--        the claim, left as it is.
local v = redis.call('GET', KEYS[1])
local refused = 'x:'
if v and string.sub(v, 1, 2) == 'x:' then
  refused = v
elseif v and v ~= 't:' .. ARGV[1] then
  return 0
end
if not string.find(refused .. ' ', ' ' .. ARGV[1] .. ' ', 3, true) then
  refused = refused .. ' ' .. ARGV[1]
end
redis.call('SET', KEYS[1], refused, 'PX', ARGV[2])
return 1
