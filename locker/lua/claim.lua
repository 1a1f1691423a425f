-- claim.lua: the first caller to claim a key wins it until the ttl runs out.
--
-- KEYS[1]  claim key       <prefix>{<key>}:claim
-- ARGV[1]  claim token (random per Claim call)
-- ARGV[2]  ttl in milliseconds
--
-- Reply: 1 this token holds the claim (it was first, or this is a re-sent
--        call of the winner), 0 another token claimed it first.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return 1
end
return 0
