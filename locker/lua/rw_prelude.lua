-- rw_prelude.lua: the shared start of every rw_*.lua script (and of
-- force.lua), inserted where a script says "-- @include rw_prelude.lua"
-- (script.go does it when it embeds the scripts; the SHA is that of the
-- assembled source). Before the include, a script sets want: the read hold
-- fields it will look up, fetched with the rest of the state in one call.
--
-- KEYS[1]  read-write hash  <prefix>{<name>}:rw
-- KEYS[2]  read expiries    <prefix>{<name>}:rwr (a sorted set)
--
-- Reply: none of its own; it defines now (server time in ms), micros
-- (server time in µs), the live write holds, intents and abandoned calls
-- (names, expired ones deleted), the number of live read holds (readers,
-- expired ones deleted), the last write fence, the owner of the write
-- holds (writer), and the helpers get, put, drop, ownReads, readUntil,
-- allReads, earlier, stale and finish.
--
-- Hash fields: 'f' fence of the last write grant; 'w:<id>' a write hold,
-- 'r:<id>' a read hold, each "<expiry ms>:<order>:<n>:<owner>" (order: the
-- grant's server time in µs; n: the lease's last extend number); 'i:<id>' a
-- waiting writer's intent and 'x:<hold field>' an abandoned acquire call
-- (refused until its expiry, see rw_cancel.lua), each "<expiry ms>:0:0:";
-- 'o' the names of the write holds, intents and abandoned calls, separated
-- by spaces (they are few: every call loads them whole); 'c:<owner>' the
-- number of read holds the owner has stored. Hold ids are call ids: every
-- acquire call names its own hold. Expiries are absolute, in server time.
--
-- The sorted set scores every read hold field by its expiry, plus the
-- member '' scored 0, which keeps the set in existence as long as the hash
-- (a slot being migrated answers a script whose keys are partly missing
-- with TRYAGAIN). Read holds are never scanned by a lock, unlock, extend or
-- downgrade: expired ones are found by score, live ones counted by score,
-- the latest expiry read from the top. A call costs O(log R) in the number
-- of readers R, plus the expired holds it deletes (each deleted once).
-- serverTime and publish:
-- @include shared_prelude.lua

local now, micros = serverTime()
local H, Z = KEYS[1], KEYS[2]

-- parse returns the hold stored as v, {expiry, owner, order, n}, or nil
-- when there is none or it has expired.
local function parse(v)
  local exp, order, n, owner = string.match(v or '', '^(%d+):(%d+):(%d+):(.*)$')
  exp = tonumber(exp)
  local h
  if exp and exp > now then
    h = {exp, owner, tonumber(order), tonumber(n)}
  end
  return h
end

-- live maps a field to its hold, or false once known to be absent; names
-- lists the live fields other than read holds, kept in 'o'.
local live, names, renamed = {}, {}, false
local had, fence, writer, readers = {w = false, r = false, i = false, x = false}, nil, nil, 0
do
  local fields = {'f', 'o'}
  for _, k in ipairs(want) do
    fields[#fields + 1] = k
  end
  local v = redis.call('HMGET', H, unpack(fields))
  fence = tonumber(v[1])
  for j, k in ipairs(want) do
    if string.sub(k, 1, 2) == 'r:' then
      live[k] = parse(v[j + 2]) or false
    end
  end
  if v[2] and v[2] ~= '' then
    local all = {}
    for k in string.gmatch(v[2], '%S+') do
      all[#all + 1] = k
    end
    local vals = redis.call('HMGET', H, unpack(all))
    for j, k in ipairs(all) do
      local kind = string.sub(k, 1, 1)
      had[kind] = true
      local h = parse(vals[j])
      if h then
        live[k] = h
        names[#names + 1] = k
        if kind == 'w' then
          writer = h[2]
        end
      else
        renamed = true
        if vals[j] then
          redis.call('HDEL', H, k) -- purge an expired hold or intent
        end
      end
    end
  end
  -- Purge expired read holds (purgeExpired), and count them off their
  -- owners' read holds.
  local per = {}
  purgeExpired(H, Z, now, function(k, v)
    had.r = true
    local owner = v and string.match(v, '^%d+:%d+:%d+:(.*)$')
    if owner then
      per[owner] = (per[owner] or 0) + 1
    end
    live[k] = false
  end, function()
    for owner, n in pairs(per) do
      if redis.call('HINCRBY', H, 'c:' .. owner, -n) <= 0 then
        redis.call('HDEL', H, 'c:' .. owner)
      end
    end
    per = {}
  end)
  readers = redis.call('ZCOUNT', Z, '(' .. now, '+inf')
  if readers > 0 then
    had.r = true
  end
end

-- get returns the live hold or record stored as field k, or nil.
local function get(k)
  local h = live[k]
  if h == nil and string.sub(k, 1, 2) == 'r:' then
    h = parse(redis.call('HGET', H, k)) or false
    live[k] = h
  end
  return h or nil
end

-- ownReads returns the number of read holds owner has stored.
local function ownReads(owner)
  return tonumber(redis.call('HGET', H, 'c:' .. owner)) or 0
end

-- readUntil returns the latest expiry of a live read hold, 0 when none.
local function readUntil()
  if readers == 0 then
    return 0
  end
  local top = redis.call('ZREVRANGE', Z, 0, 0, 'WITHSCORES')
  return tonumber(top[2]) or 0
end

-- allReads returns the fields of every live read hold (a scan: only for
-- an Owner's hand-over release and an operator's forced release).
local function allReads()
  local out = {}
  local ks = redis.call('ZRANGEBYSCORE', Z, '(' .. now, '+inf')
  for i = 1, #ks, 500 do
    local chunk = {unpack(ks, i, math.min(i + 499, #ks))}
    local vals = redis.call('HMGET', H, unpack(chunk))
    for j, k in ipairs(chunk) do
      live[k] = parse(vals[j]) or false
      if live[k] then
        out[#out + 1] = k
      end
    end
  end
  return out
end

-- earlier returns the fields of owner's holds of the kind of hold ('r:'
-- or 'w:') granted at or before order, hold itself excepted (read holds
-- are scanned only when owner has more than one).
local function earlier(owner, hold, order)
  local kind, out, ks = string.sub(hold, 1, 2), {}, names
  if kind == 'r:' then
    if ownReads(owner) < 2 then
      return out
    end
    ks = allReads()
  end
  for _, k in ipairs(ks) do
    local b = live[k]
    if k ~= hold and string.sub(k, 1, 2) == kind and b and b[2] == owner and b[3] <= order then
      out[#out + 1] = k
    end
  end
  return out
end

-- put records field k as live until exp for owner, granted at order (µs)
-- and last extended with extend number n.
local function put(k, exp, owner, order, n)
  local old = get(k)
  live[k] = {exp, owner, order, n}
  redis.call('HSET', H, k, string.format('%d:%d:%d:', exp, order, n) .. owner)
  if string.sub(k, 1, 2) == 'r:' then
    redis.call('ZADD', Z, exp, k)
    if old and old[2] ~= owner and redis.call('HINCRBY', H, 'c:' .. old[2], -1) <= 0 then
      redis.call('HDEL', H, 'c:' .. old[2])
    end
    if not old then
      readers = readers + 1
    end
    if not old or old[2] ~= owner then
      redis.call('HINCRBY', H, 'c:' .. owner, 1)
    end
  elseif not old then
    names[#names + 1] = k
    renamed = true
  end
end

-- drop deletes field k.
local function drop(k)
  local h = get(k)
  if not h then
    return
  end
  live[k] = false
  redis.call('HDEL', H, k)
  if string.sub(k, 1, 2) == 'r:' then
    redis.call('ZREM', Z, k)
    readers = readers - 1
    if redis.call('HINCRBY', H, 'c:' .. h[2], -1) <= 0 then
      redis.call('HDEL', H, 'c:' .. h[2])
    end
    return
  end
  for j = #names, 1, -1 do
    if names[j] == k then
      table.remove(names, j)
    end
  end
  renamed = true
end

-- stale is the status of a hold that is gone: -1 when another owner holds
-- the lock in a mode that excludes it, 0 otherwise.
local function stale(owner, hold)
  for _, k in ipairs(names) do
    if string.sub(k, 1, 1) == 'w' and live[k][2] ~= owner then
      return -1
    end
  end
  if string.sub(hold, 1, 1) == 'w' and readers > ownReads(owner) then
    return -1
  end
  return 0
end

-- finish publishes on the wake channel (publish, in shared_prelude.lua)
-- when this call freed capacity (no write or read hold left where one was
-- stored, or no write hold or intent left where one was), sets both keys to expire with the latest live field (or deletes
-- them), and returns the keys' remaining ms.
local function finish(wake)
  local nw, ni, last = 0, 0, readUntil()
  for _, k in ipairs(names) do
    local kind = string.sub(k, 1, 1)
    if kind == 'w' then
      nw = nw + 1
    elseif kind == 'i' then
      ni = ni + 1
    end
    if live[k][1] > last then
      last = live[k][1]
    end
  end
  if ((had.w or had.r) and nw + readers == 0) or ((had.w or had.i) and nw + ni == 0) then
    publish(wake)
  end
  if last == 0 then
    redis.call('DEL', H, Z)
    return 0
  end
  if renamed then
    if #names > 0 then
      redis.call('HSET', H, 'o', table.concat(names, ' '))
    else
      redis.call('HDEL', H, 'o')
    end
  end
  redis.call('ZADD', Z, 0, '')
  redis.call('PEXPIRE', H, last - now)
  redis.call('PEXPIRE', Z, last - now)
  return last - now
end
