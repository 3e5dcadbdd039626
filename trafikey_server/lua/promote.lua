--[[
  promote.lua -- the scripted twin of EMQ.PROMOTE: move due scheduled jobs to pending.

    KEYS[1]  schedule  P..schedule
    KEYS[2]  pending   P..pending
    KEYS[3]  P         the queue's prefix
    ARGV[1]  limit     optional, default 1000 (>= 1): at most this many due entries

  Takes the entries whose run-at <= now, earliest first (same millisecond: id byte
  order).  An entry whose row is not 'scheduled' (no row at all, or a row that lives
  elsewhere) is dropped from schedule and not counted; it still counts toward limit.
  Reply: the number of jobs promoted.
  Writes, for each promoted job: ZREM schedule id; INCR P..seq; HSET row state pending;
          ZADD pending <seq> id.  For each dropped entry: ZREM schedule id.
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

if #KEYS ~= 3 then
  return redis.error_reply("ERR numkeys for 'emq.promote' must be 3")
end
if #ARGV > 1 then
  return redis.error_reply("ERR wrong number of arguments for 'emq.promote' command")
end

local scheduleKey, pendingKey, prefix = KEYS[1], KEYS[2], KEYS[3]
local limit = 1000
if #ARGV == 1 then
  local err
  limit, err = int(ARGV[1], 'limit', 1)
  if not limit then
    return redis.error_reply(err)
  end
end

local time = rcall('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

local promoted = 0
local due = rcall('ZRANGEBYSCORE', scheduleKey, '-inf', now, 'LIMIT', 0, limit)
for _, jobId in ipairs(due) do
  local rowKey = prefix .. 'job:' .. jobId
  local state = rcall('HGET', rowKey, 'state')
  rcall('ZREM', scheduleKey, jobId)
  if state == 'scheduled' then
    local seq = rcall('INCR', prefix .. 'seq')
    rcall('HSET', rowKey, 'state', 'pending')
    rcall('ZADD', pendingKey, seq, jobId)
    promoted = promoted + 1
  end
end
return promoted
