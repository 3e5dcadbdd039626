--[[
  fail.lua -- the scripted twin of EMQ.FAIL: settle a held job as failed.

    KEYS[1]  active        P..active
    KEYS[2]  pending       P..pending
    KEYS[3]  schedule      P..schedule
    KEYS[4]  dead          P..dead
    KEYS[5]  P             the queue's prefix
    ARGV[1]  id
    ARGV[2]  token         the attempts value the claim replied, compared as bytes
    ARGV[3]  max_attempts  (>= 1)
    ARGV[4]  backoff_ms    (>= 0)
    ARGV[5]  reason        optional; when given (even empty) it is kept in the row's error

  The retry cap is on attempts, the claim count: attempts >= max_attempts -> dead.
  (This script keeps no failures counter; the native verb does, and caps on it.)
  The token is checked before the state, so a worker repeating its final FAIL while
  still presenting the right token is told 'dead' again and nothing is written.

  Reply: 'dead', 'scheduled' or 'pending', the job's new state.
  Writes: [HSET row error <reason>]; ZREM active id; then
    dead:      HSET row state dead; ZADD dead <now> id
    scheduled: HSET row state scheduled; ZADD schedule <now + backoff_ms> id
    pending:   INCR P..seq; HSET row state pending; ZADD pending <seq> id
]]
local rcall = redis.call

local function int(raw, name, low)
  local n = tonumber(raw)
  if n == nil or n % 1 ~= 0 then
    return nil, 'ERR value is not an integer or out of range'
  end
  if n < low then
    return nil, 'ERR ' .. name .. ' is out of range'
  end
  return n
end

if #KEYS ~= 5 then
  return redis.error_reply("ERR numkeys for 'emq.fail' must be 5")
end
if #ARGV ~= 4 and #ARGV ~= 5 then
  return redis.error_reply("ERR wrong number of arguments for 'emq.fail' command")
end

local activeKey, pendingKey, scheduleKey, deadKey, prefix = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local jobId, token, reason = ARGV[1], ARGV[2], ARGV[5]
local maxAttempts, err = int(ARGV[3], 'max_attempts', 1)
if not maxAttempts then
  return redis.error_reply(err)
end
local backoffMs
backoffMs, err = int(ARGV[4], 'backoff_ms', 0)
if not backoffMs then
  return redis.error_reply(err)
end

local rowKey = prefix .. 'job:' .. jobId
local row = rcall('HMGET', rowKey, 'state', 'attempts')
if not row[1] then
  return redis.error_reply('EMQNOJOB job ' .. jobId .. ' has no row')
end
if row[2] ~= token then
  return redis.error_reply('EMQLEASE job ' .. jobId .. ' is not held by token ' .. token)
end
if row[1] == 'dead' then
  return 'dead'
end
if row[1] ~= 'active' then
  return redis.error_reply('EMQSTATE job ' .. jobId .. ' is ' .. row[1] .. ', not active')
end

local exhausted = tonumber(row[2]) >= maxAttempts
local time = rcall('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

if reason then
  rcall('HSET', rowKey, 'error', reason)
end
rcall('ZREM', activeKey, jobId)
if exhausted then
  rcall('HSET', rowKey, 'state', 'dead')
  rcall('ZADD', deadKey, now, jobId)
  return 'dead'
end
if backoffMs > 0 then
  rcall('HSET', rowKey, 'state', 'scheduled')
  rcall('ZADD', scheduleKey, now + backoffMs, jobId)
  return 'scheduled'
end
local seq = rcall('INCR', prefix .. 'seq')
rcall('HSET', rowKey, 'state', 'pending')
rcall('ZADD', pendingKey, seq, jobId)
return 'pending'
