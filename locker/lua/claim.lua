-- claim.lua: the first caller to claim a key wins it until the ttl runs out.
--
-- KEYS[1]  claim key       <prefix>{<key>}:claim
-- ARGV[1]  claim token (random per Claim call, or the caller's for ClaimAs)
-- ARGV[2]  ttl in milliseconds
--
-- Reply: 1 this token holds the claim (it was first, or it claimed before:
--        a re-sent call, or ClaimAs again with the same token), 0 another
--        token holds it, or this call was abandoned (see unclaim.lua).
-- The key holds 't:<token>', or 'x: <token> <token> ...' while abandoned
-- calls of those tokens are refused (any other token may claim over it).
local v = redis.call('GET', KEYS[1])
if v == 't:' .. ARGV[1] then
  return 1
end
if v and string.sub(v, 1, 2) ~= 'x:' then
  return 0
end
if v and string.find(v .. ' ', ' ' .. ARGV[1] .. ' ', 3, true) then
  return 0
end
redis.call('SET', KEYS[1], 't:' .. ARGV[1], 'PX', ARGV[2])
return 1
