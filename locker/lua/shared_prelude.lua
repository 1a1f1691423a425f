-- shared_prelude.lua: what the scripts of every kind of lock share. The
-- mutex, read-write and semaphore preludes include it, and so may any
-- script ("-- @include shared_prelude.lua"; script.go includes a file at
-- most once per script). It only defines functions: including it costs
-- no redis.call.

-- publish sends a wake-up on channel ch. SPUBLISH keeps the message in the
-- lock's shard (on a Cluster, it never crosses the cluster bus); a server
-- without sharded pub/sub (Redis 6.2, miniredis) refuses it, and gets
-- PUBLISH instead. No other script names either command.
local function publish(ch)
  local sent = redis.pcall('SPUBLISH', ch, '')
  if type(sent) == 'table' and sent.err then
    redis.call('PUBLISH', ch, '')
  end
end
