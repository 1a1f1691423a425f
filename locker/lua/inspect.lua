-- inspect.lua: the state of the mutex, the read-write lock and the
-- semaphore of one name, read-only: only read commands and TIME, nothing
-- purged or changed.
--
-- KEYS[1]  lock hash       <prefix>{<name>}
-- KEYS[2]  waiter queue    <prefix>{<name>}:q (sorted set: waiter id by arrival)
-- KEYS[3]  waiter expiries <prefix>{<name>}:qx (hash: waiter id -> "<expiry
--                          ms>:<ttl>:<owner>", see acquire.lua)
-- KEYS[4]  read-write hash <prefix>{<name>}:rw (fields as in rw_prelude.lua)
-- KEYS[5]  semaphore hash  <prefix>{<name>}:sem (fields as in sem_prelude.lua)
-- KEYS[6]  semaphore set   <prefix>{<name>}:semz (waiters 'a:<id>' by arrival,
--                          below 0)
-- KEYS[7]  leader record   <prefix>{<name>}:leader (see elect_proclaim.lua)
-- KEYS[8]  candidates      <prefix>{<name>}:cand (see elect_acquire.lua)
-- ARGV[1]  fingerprint length in hex digits (of redis.sha1hex of a token)
-- ARGV[2]  most semaphore holders to list
--
-- Reply: an array of 27 integers, strings and one array, in this order:
--   1 server time in µs (TIME)
--   mutex:  2 held (1/0), 3 fence, 4 pttl ms, 5 holds ('h:' fields),
--           6 owner fingerprint ('' when free),
--           7 live queued waiters, 8 head waiter's fingerprint ('' when none)
--   rw:     9 live read holds, 10 longest read pttl ms,
--           11 live write holds, 12 longest write pttl ms,
--           13 writer's fingerprint ('' when none), 14 live writer intents,
--           15 last write fence ('f', 0 when none),
--           16 distinct owners of the live read holds
--   sem:    17 permit limit (SetPermits' 'n', else the last acquire's 'm';
--           0 when no semaphore), 18 1 when SetPermits stored it,
--           19 permits held by live holds, 20 live holds,
--           21 live waiters, 22 oldest live waiter's fingerprint,
--           23 up to ARGV[2] live holds, oldest grant first, each
--           {fingerprint of its owner token (its call id), permits, pttl
--           ms, fence}
--   mutex:  24 live starving waiters kept in the lock's 'w' mark (see
--           mutex_prelude.lua), 25 the first one's fingerprint (of its
--           waiter id; '' when none): the one the next release hands the
--           lock to
--   election: 26 the leader's value, 27 its term (the mutex fence; 0
--           when the holder of the mutex is no leader: see
--           elect_leader.lua)
-- Tokens and ids never leave Redis: only the first ARGV[1] hex digits of
-- their SHA-1. Queue entries, holds and intents whose expiry (server time)
-- has passed are not counted; a mutex hash has no expired holds (its key
-- expires as a whole).
-- serverTime:
-- @include shared_prelude.lua
-- starvers (only its read-only helpers are called):
-- @include mutex_prelude.lua
local now, micros = serverTime()
local fplen = tonumber(ARGV[1])

local function fp(token)
  if not token then
    return ''
  end
  return string.sub(redis.sha1hex(token), 1, fplen)
end

-- The mutex.
local held, fence, pttl, holds, owner = 0, 0, 0, 0, nil
local starving, starvingHead = 0, nil
do
  local all = redis.call('HGETALL', KEYS[1])
  for j = 1, #all, 2 do
    local k, v = all[j], all[j + 1]
    if k == 'owner' then
      owner = v
    elseif k == 'w' then
      for _, e in ipairs(starvers(v)) do -- {expiry ms, ttl ms, waiter id, owner}
        if e[1] > now then
          starving = starving + 1
          if not starvingHead then
            starvingHead = e[3]
          end
        end
      end
    elseif k == 'fence' then
      fence = tonumber(v) or 0
    elseif string.sub(k, 1, 2) == 'h:' then
      holds = holds + 1
    end
  end
  if owner then
    held = 1
    pttl = redis.call('PTTL', KEYS[1])
    if pttl < 0 then
      pttl = 0
    end
  end
end

-- The FIFO queue: live entries in arrival order.
local queued, head = 0, nil
do
  local ids = redis.call('ZRANGE', KEYS[2], 0, -1)
  if #ids > 0 then
    local exp = {}
    local all = redis.call('HGETALL', KEYS[3])
    for j = 1, #all, 2 do
      exp[all[j]] = tonumber(string.match(all[j + 1], '^%d+')) -- "<expiry>:<ttl>:<owner>"
    end
    for _, id in ipairs(ids) do
      if (exp[id] or 0) > now then
        queued = queued + 1
        if not head then
          head = id
        end
      end
    end
  end
end

-- The read-write lock.
local readers, rpttl, writes, wpttl, writer, intents, wfence = 0, 0, 0, 0, nil, 0, 0
local readerOwners, distinct = {}, 0
do
  local all = redis.call('HGETALL', KEYS[4])
  for j = 1, #all, 2 do
    local k, v = all[j], all[j + 1]
    local kind = string.sub(k, 1, 1)
    if k == 'f' then
      wfence = tonumber(v) or 0
    elseif string.sub(k, 2, 2) == ':' and (kind == 'w' or kind == 'r' or kind == 'i') then
      local e, _, _, o = string.match(v, '^(%d+):(%d+):(%d+):(.*)$')
      e = tonumber(e)
      if e and e > now then
        if kind == 'r' then
          readers = readers + 1
          rpttl = math.max(rpttl, e - now)
          if not readerOwners[o] then
            readerOwners[o] = 1
            distinct = distinct + 1
          end
        elseif kind == 'w' then
          writes = writes + 1
          wpttl = math.max(wpttl, e - now)
          writer = o
        else
          intents = intents + 1
        end
      end
    end
  end
end

-- The semaphore: holds 'h:<id>' "<expiry>:<permits>:<extend n>:<fence>",
-- waiters 'q:<id>' "<expiry>:<permits>:..." in arrival order ('a:<id>').
local limit, limitSet, permits, semHolds, waiting, semHead = 0, 0, 0, 0, 0, nil
local holders = {}
do
  local all = redis.call('HGETALL', KEYS[5])
  local live, queue = {}, {}
  for j = 1, #all, 2 do
    local k, v = all[j], all[j + 1]
    local kind = string.sub(k, 1, 2)
    if k == 'n' then
      limit, limitSet = tonumber(v) or 0, 1
    elseif k == 'm' and limitSet == 0 then
      limit = tonumber(v) or 0
    elseif kind == 'h:' then
      local e, p, _, f = string.match(v, '^(%d+):(%d+):(%d+):(%d+)')
      e = tonumber(e)
      if e and e > now then
        permits = permits + tonumber(p)
        semHolds = semHolds + 1
        live[#live + 1] = {string.sub(k, 3), tonumber(p), e - now, tonumber(f)}
      end
    elseif kind == 'q:' then
      local e = tonumber(string.match(v, '^(%d+)'))
      if e and e > now then
        queue[string.sub(k, 3)] = true
        waiting = waiting + 1
      end
    end
  end
  if waiting > 0 then
    for _, a in ipairs(redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', '(0')) do
      if queue[string.sub(a, 3)] then
        semHead = string.sub(a, 3)
        break
      end
    end
  end
  table.sort(live, function(x, y) return x[4] < y[4] end)
  for i = 1, math.min(#live, tonumber(ARGV[2])) do
    local h = live[i]
    holders[#holders + 1] = {fp(h[1]), h[2], h[3], h[4]}
  end
end

-- The election: the record of the mutex's current term, or its holder's
-- value as a candidate (as elect_leader.lua reads them).
local leader, term = '', 0
if held == 1 then
  local r = redis.call('HMGET', KEYS[7], 'fence', 'value')
  if tonumber(r[1]) == fence then
    leader, term = r[2], fence
  else
    local cand = owner and redis.call('HGET', KEYS[8], owner)
    if cand then
      leader, term = string.sub(cand, string.find(cand, ':', 1, true) + 1), fence
    end
  end
end

return {micros, held, fence, pttl, holds, fp(owner), queued, fp(head),
  readers, rpttl, writes, wpttl, fp(writer), intents, wfence, distinct,
  limit, limitSet, permits, semHolds, waiting, fp(semHead), holders,
  starving, fp(starvingHead), leader, term}
