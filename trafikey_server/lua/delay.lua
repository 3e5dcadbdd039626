--[[
  delay.lua -- the scripted twin of EMQ.DELAY: give a held job back to run later,
  without counting a failure.

    KEYS[1]  active    P..active
    KEYS[2]  schedule  P..schedule
    KEYS[3]  P         the queue's prefix
    ARGV[1]  id
    ARGV[2]  token     the attempts value the claim replied, compared as bytes
    ARGV[3]  delay_ms  (>= 0)

  Reply: 1.
  Writes: ZREM active id; HSET row state scheduled; ZADD schedule <now + delay_ms> id.
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
  return redis.error_reply("ERR numkeys for 'emq.delay' must be 3")
end
if #ARGV ~= 3 then
  return redis.error_reply("ERR wrong number of arguments for 'emq.delay' command")
end

local activeKey, scheduleKey, prefix = KEYS[1], KEYS[2], KEYS[3]
local jobId, token = ARGV[1], ARGV[2]
local delayMs, err = int(ARGV[3], 'delay_ms', 0)
if not delayMs then
  return redis.error_reply(err)
end

local rowKey = prefix .. 'job:' .. jobId
local row = rcall('HMGET', rowKey, 'state', 'attempts')
if not row[1] then
  return redis.error_reply('EMQNOJOB job ' .. jobId .. ' has no row')
end
if row[1] ~= 'active' then
  return redis.error_reply('EMQSTATE job ' .. jobId .. ' is ' .. row[1] .. ', not active')
end
if row[2] ~= token then
  return redis.error_reply('EMQLEASE job ' .. jobId .. ' is not held by token ' .. token)
end

local time = rcall('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)

rcall('ZREM', activeKey, jobId)
rcall('HSET', rowKey, 'state', 'scheduled')
rcall('ZADD', scheduleKey, now + delayMs, jobId)
return 1
