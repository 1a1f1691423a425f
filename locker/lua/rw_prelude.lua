-- rw_prelude.lua: the shared start of every rw_*.lua script, inserted where
-- a script says "-- @include rw_prelude.lua" (script.go does it when it
-- embeds the scripts; the SHA is that of the assembled source).
--
-- KEYS[1]  read-write hash  <prefix>{<name>}:rw
-- ARGV[1]  owner token (as each including script documents its ARGV)
--
-- Reply: none of its own; it defines now (server time in ms), micros
-- (server time in µs), the live holds and intents (expired ones deleted),
-- the last write fence, and the helpers put, drop, stale and finish.
-- Hash fields: 'f' fence of the last write grant; 'w:<id>' a write hold,
-- 'r:<id>' a read hold, each "<expiry ms>:<order>:<n>:<owner>" (order: the
-- grant's server time in µs; n: the lease's last extend number); 'i:<id>' a
-- waiting writer's intent and 'x:<hold field>' an abandoned acquire call
-- (refused until its expiry, see rw_cancel.lua), each "<expiry ms>:0:0:".
-- Hold ids are call ids: every acquire call names its own hold. Expiries
-- are absolute, in server time.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local micros = tonumber(t[1]) * 1000000 + tonumber(t[2])
-- writer is the owner of the live write holds as loaded, or nil.
local live, had, fence, writer = {}, {w = false, r = false, i = false, x = false}, nil, nil
do
  local all = redis.call('HGETALL', KEYS[1])
  for j = 1, #all, 2 do
    local k, v = all[j], all[j + 1]
    local kind = string.sub(k, 1, 1)
    if k == 'f' then
      fence = tonumber(v)
    elseif string.sub(k, 2, 2) == ':' and had[kind] ~= nil then
      had[kind] = true
      local exp, order, n, owner = string.match(v, '^(%d+):(%d+):(%d+):(.*)$')
      exp = tonumber(exp)
      if exp and exp > now then
        live[k] = {exp, owner, tonumber(order), tonumber(n)}
        if kind == 'w' then
          writer = owner
        end
      else
        redis.call('HDEL', KEYS[1], k) -- purge an expired hold or intent
      end
    end
  end
end

-- put records field k as live until exp for owner, granted at order (µs)
-- and last extended with extend number n.
local function put(k, exp, owner, order, n)
  live[k] = {exp, owner, order, n}
  redis.call('HSET', KEYS[1], k, string.format('%d:%d:%d:', exp, order, n) .. owner)
end

-- drop deletes field k.
local function drop(k)
  if live[k] then
    live[k] = nil
    redis.call('HDEL', KEYS[1], k)
  end
end

-- count returns the number of live fields of kind whose owner is not skip.
local function count(kind, skip)
  local n = 0
  for k, h in pairs(live) do
    if string.sub(k, 1, 1) == kind and h[2] ~= skip then
      n = n + 1
    end
  end
  return n
end

-- stale is the status of a hold that is gone: -1 when another owner holds
-- the lock in a mode that excludes it, 0 otherwise.
local function stale(owner, hold)
  for k, h in pairs(live) do
    local kind = string.sub(k, 1, 1)
    if h[2] ~= owner and (kind == 'w' or (kind == 'r' and string.sub(hold, 1, 1) == 'w')) then
      return -1
    end
  end
  return 0
end

-- finish publishes on the wake channel (SPUBLISH, or PUBLISH where the
-- server has none) when this call freed capacity (no write or read hold
-- left where one was stored, or no write hold or intent left where one
-- was), sets the key to expire with its latest live field (or deletes
-- it), and returns the key's remaining ms.
local function finish(wake)
  local nw, nr, ni, last = 0, 0, 0, 0
  for k, h in pairs(live) do
    local kind = string.sub(k, 1, 1)
    if kind == 'w' then
      nw = nw + 1
    elseif kind == 'r' then
      nr = nr + 1
    elseif kind == 'i' then
      ni = ni + 1
    end
    if h[1] > last then
      last = h[1]
    end
  end
  if ((had.w or had.r) and nw + nr == 0) or ((had.w or had.i) and nw + ni == 0) then
    -- SPUBLISH keeps the message in the lock's shard; a server without it
    -- (Redis 6.2, miniredis) refuses it, and gets PUBLISH instead.
    local sent = redis.pcall('SPUBLISH', wake, '')
    if type(sent) == 'table' and sent.err then
      redis.call('PUBLISH', wake, '')
    end
  end
  if last == 0 then
    redis.call('DEL', KEYS[1])
    return 0
  end
  redis.call('PEXPIRE', KEYS[1], last - now)
  return last - now
end
